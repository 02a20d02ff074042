"""Re-running a protocol's deciding roles with other models on a saved run (`moot score`).

The original is never touched. A run folder is copied to a new run folder: run.json (saying what
was rescored, from where), a copy of every transcript, a new results.jsonl and a new reply cache.
Each completed unit's copy gets what its protocol's `rescore` records — the new calls and
messages, a conference's new scores — and an item a new `outcome` whose `decided_by` names the
rescoring. Sequence numbers continue the copy's, so it loads as strictly as any transcript.
results.jsonl holds the new predictions (and the original ones), so `moot report RUN RESCORED`
puts both side by side. A transcript file is copied to one new file the same way.

The calls go through the engine the caller gives (priced, within its cost limit, moot.models.budget):
a call that fails for good (the limit reached) stops the rescoring, and no unit starts after it.

Protocols send a role's recorded prompt to its new model with the kit's `last_call` and `resend`
(moot.kit._rescore).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from pydantic import BaseModel, ValidationError

from moot.log.events import Error, Outcome as OutcomeEvent
from moot.models.calls import FatalModelError, ModelCallError
from moot.models.engine import ModelEngine, RoleModel
from moot.contract.protocol import Protocol, Rescore, Rescored, S
from moot.kit._context import Unit, UnitContext
from moot.engine.folder import unit_file
from moot.saved.files import Record
from moot.saved.records import RunMeta
from moot.errors import UsageError
from moot.log.transcript import EventLog, Transcript, dump_events
from moot.safety.diskio import is_environment_error, write_atomic
from moot.safety.secrets import describe
from moot.scenario.blocks import ScenarioBase


def rescored_by(roles: Mapping[str, str]) -> str:
    return "rescored: " + ", ".join(f"{role}={spec}" for role, spec in roles.items())


# --- the driver ------------------------------------------------------------------------------

NOT_STARTED = "not rescored: the rescoring stopped before it"


@dataclass
class UnitRescored:
    """One unit after rescoring: its results row (None: no row, it failed or never finished)."""

    unit: str
    row: Optional[Record]
    lines: tuple[str, ...] = ()
    changed: bool = False
    failed: str = ""
    kept: bool = False  # an item the protocol decided without the rescored roles: its result stands
    stop: str = ""  # a call failed for good (e.g. the cost limit reached): why the rescoring stops
    continues: str = ""  # (stop) how to go on, if a rerun can (the error's `continues`)

    @property
    def halted(self) -> bool:
        """It failed because the rescoring stopped (its own fatal call, or never started)."""
        return bool(self.stop) or self.failed == NOT_STARTED


@dataclass
class Job:
    """What to rescore and how: the protocol, roles -> new specs, and the run's run.json."""

    protocol: Protocol[Any]
    roles: Mapping[str, str]
    every: bool = False
    meta: RunMeta = field(default_factory=RunMeta)


def copy_transcript(transcript: Transcript, out: Path) -> int:
    """Copy a transcript's complete events to `out`; the next sequence number. A transcript of
    an older schema is written as it loads today (renumbered), so appended events fit it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if transcript.migrated_from is None:
        data = transcript.path.read_bytes()
        if transcript.torn_tail:
            data = data[: data.rfind(b"\n") + 1]
        write_atomic(out, data)
        return transcript.next_seq
    events = dump_events(transcript.events)
    for n, event in enumerate(events, 1):
        event["seq"] = n
    write_atomic(out, "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events))
    return len(events) + 1


def recorded_scenario(protocol: Protocol[S], transcript: Transcript, meta: RunMeta) -> S:
    """The unit's scenario as recorded (run_started; folders of earlier versions: run.json)."""
    data = transcript.started.scenario or meta.scenario_fields
    try:
        return protocol.scenario.model_validate({**data, "protocol": protocol.name})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise UsageError(f"{transcript.path}: its recorded scenario no longer reads as a {protocol.name} "
                         f"scenario ({'.'.join(map(str, first['loc']))}: {first['msg']}); it cannot be rescored "
                         "by this moot") from None


def models_for(transcript: Transcript, scenario: ScenarioBase, roles: Mapping[str, str]) -> dict[str, RoleModel]:
    """The recorded model of every role, the new one of each rescored role (same settings)."""
    started = transcript.started
    default = scenario.generation.model_dump() if hasattr(scenario, "generation") else {}
    models = {role: RoleModel(spec, started.settings.get(role, default)) for role, spec in started.models.items()}
    models.update({role: RoleModel(spec, started.settings.get(role, default)) for role, spec in roles.items()})
    return models


async def rescore_unit(job: Job, transcript: Transcript, row: Optional[Record], out: Path,
                       engine: ModelEngine) -> UnitRescored:
    """Copy one unit's transcript to `out` and, if it completed, rescore it there."""
    s = transcript.started
    unit_id = unit_of(transcript)
    next_seq = copy_transcript(transcript, out)
    kept = {**row, "transcript": out.name} if row else None
    if not transcript.completed or (job.protocol.units.items and transcript.outcome is None):
        return UnitRescored(unit_id, kept, failed="not rescored: the unit did not complete")
    scenario = recorded_scenario(job.protocol, transcript, job.meta)
    log = EventLog(out, next_seq, fsync=False)
    ctx = UnitContext(Unit(unit_id, scenario, s.inputs, s.gold, s.variant), engine,
                      models_for(transcript, scenario, job.roles), log, prior=transcript,
                      expected=job.protocol.expected(scenario))
    try:
        assert job.protocol.rescore is not None  # a Job is made for deciders, which come with a rescore
        done: Rescored = await job.protocol.rescore(scenario, Rescore(transcript, job.roles, job.every), ctx)
        new = None
        if done.outcome is not None and (prediction := done.outcome.prediction) is not None:
            new = replace(done.outcome, decided_by=f"{done.outcome.decided_by} ({rescored_by(job.roles)})")
            ctx.record(OutcomeEvent(prediction=prediction, explanation=new.explanation, raw=new.raw,
                                    gold=s.gold, decided_by=new.decided_by))
    except ModelCallError as exc:
        await ctx.settle()  # its other calls in flight end and are recorded: the log holds every call paid for
        ctx.record(Error(speaker=exc.role, stage="rescore", cause=exc.cause, attempts=exc.attempts))
        failed = f"rescoring failed: {exc.cause}"
        if isinstance(exc, FatalModelError):  # the rescoring stops here
            return UnitRescored(unit_id, None, failed=failed, stop=exc.cause, continues=exc.continues if exc.resumes else "")
        return UnitRescored(unit_id, None, failed=failed)
    except Exception as exc:  # noqa: BLE001 - recorded; other units go on
        if is_environment_error(exc):  # the disk refused (exit 3): nothing to record it in
            raise
        await ctx.settle()
        ctx.record(Error(stage="rescore", cause=describe(exc)))
        return UnitRescored(unit_id, None, failed=f"rescoring failed: {describe(exc)}")
    finally:
        log.close()
    if new is None:
        return UnitRescored(unit_id, kept, done.lines, kept=job.protocol.units.items)
    before = transcript.outcome
    row = {**(kept or {"id": unit_id, "status": "completed", "gold": s.gold, "transcript": out.name}),
           "prediction": new.prediction, "explanation": new.explanation, "decided_by": new.decided_by,
           "original_prediction": before.prediction if before else None, "rescored": dict(job.roles)}
    return UnitRescored(unit_id, row, done.lines, changed=before is not None and before.prediction != new.prediction)


async def rescore_units(job: Job, units: Sequence[tuple[Transcript, Optional[Record], Path]], engine: ModelEngine,
                        in_flight: int) -> list[UnitRescored]:
    """Rescore units, at most `in_flight` at once; results in the units' order. A call that
    failed for good (the cost limit reached, a refused key) stops it: no unit starts after it."""
    slots = asyncio.Semaphore(max(1, in_flight))
    stopped: list[UnitRescored] = []

    async def one(transcript: Transcript, row: Optional[Record], out: Path) -> UnitRescored:
        async with slots:
            if stopped:
                return UnitRescored(unit_of(transcript), None, failed=NOT_STARTED)
            done = await rescore_unit(job, transcript, row, out, engine)
            if done.stop:
                stopped.append(done)
            return done

    return list(await asyncio.gather(*(one(*u) for u in units)))


def unit_of(transcript: Transcript) -> str:
    return transcript.started.unit or transcript.path.stem


def unit_path(folder: Path, transcript: Transcript) -> Path:
    return folder / unit_file(unit_of(transcript))


def clear(folder: Path) -> None:
    """Remove what an earlier, unfinished rescoring into `folder` wrote (its cache is kept)."""
    for path in folder.glob("*.jsonl"):
        path.unlink()
    for path in folder.glob("*.torn"):
        path.unlink()
    shutil.rmtree(folder / "transcripts", ignore_errors=True)
