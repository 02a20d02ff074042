"""Running units — conferences or items — in a run folder, concurrently, resumably.

`run_unit` runs one unit to its end and writes its transcript: `run_started` (or `run_resumed` when
its transcript already holds an unfinished run), what the protocol records, `outcome` (items),
`run_finished`. A failed model call ends the unit as failed with its cause (an `error` event) and
never raises; Ctrl-C (task cancellation) records it as interrupted. Either way the calls it had
answered and not recorded yet are recorded first (a failed unit waits for its other calls in
flight), so every call paid for is in the log. A unit whose transcript says it completed is not
run again.

`run_units` runs many with a bound on units in flight, appends each finished unit's row to
results.jsonl as it finishes, skips units that already have one, and stops taking new units after
an error no retry can mend (a bad API key, an unknown model). A disk that refuses a write (full,
read-only, permission) stops the whole run at once, with an `error` event where the disk still
takes one; the units left unfinished resume on the next run.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Literal, Mapping, Optional

from moot.kit.seats import Person, Seat, SeatSpec, seated_agents
from moot.kit._stage import GroupChats
from moot.safety.diskio import is_environment_error
from moot.safety.secrets import describe
from moot.log.events import Error, Outcome as OutcomeEvent, RunFinished, RunResumed
from moot.models.calls import FatalModelError, ModelCallError
from moot.models.engine import ModelEngine, RoleModel
from moot.contract.protocol import Outcome, Protocol
from moot.kit._context import Listener, Unit, UnitContext
from moot.engine.folder import RunFolder
from moot.saved.files import result_rows
from moot.saved.records import ResultRow
from moot.engine.live import Listeners, LiveTurn
from moot.engine.setup import started_event
from moot.scenario.load import same_scenario, scenario_content_hash
from moot.views.summary import totals_of
from moot.log.events import TranscriptError
from moot.log.transcript import EventLog, Transcript, load
from moot.errors import MootError
from moot.tracing import span


Status = Literal["completed", "failed", "interrupted"]


class ResumeError(MootError, ValueError):
    """A unit's transcript that cannot be continued with this scenario or these models; one line."""


class Stop:
    """Ends a run early from outside (Ctrl-C, a closed output): the running units' model calls and
    group chats are cancelled at once, and each records why it stopped. Cancelling the task alone
    is not enough: AutoGen's run_stream waits for its team to go idle before it lets a
    cancellation through, so each unit's CancellationToken is cancelled first."""

    def __init__(self) -> None:
        self.reason: Optional[str] = None
        self.contexts: set[UnitContext] = set()
        self.task: Optional[asyncio.Task[Any]] = None

    def request(self, reason: str) -> None:
        if self.reason is not None:
            return
        self.reason = reason
        for ctx in list(self.contexts):
            ctx.cancellation.cancel()
        if self.task is not None:
            self.task.cancel()


@dataclass(frozen=True)
class RunSetup:
    """What every unit of a run shares: the protocol, the scenario file, backends, resume policy."""

    protocol: Protocol[Any]
    scenario_path: str
    scenario_sha256: str
    backends: Mapping[str, Any] = field(default_factory=dict)
    allow_model_change: bool = False
    stop: Stop = field(default_factory=Stop)
    chats: GroupChats = field(default_factory=GroupChats)  # the stages' pooled group chats
    seats: tuple[SeatSpec, ...] = ()  # seats people take (`--human`), answered by `person`
    person: Optional[Person] = None

    def seats_of(self, unit: Unit, transcript: Path) -> dict[str, Seat]:
        """The unit's seated agents, each with its seat (pending files in the run folder, naming the
        unit's `transcript`); the agents of one seat take their person's turns one at a time."""
        if not self.seats or self.person is None or self.protocol.seats is None:
            return {}
        chosen = seated_agents(self.protocol.seats(unit.scenario), self.seats, self.protocol.name)
        turns = {spec.name: asyncio.Lock() for spec in chosen.values()}
        return {agent: Seat(spec, self.person, transcript.parent, transcript.name, turns[spec.name])
                for agent, spec in chosen.items()}


@dataclass(frozen=True)
class UnitResult:
    unit: Unit
    status: Status
    outcome: Optional[Outcome]
    transcript: Path
    cause: str = ""
    fatal: bool = False
    resumes: bool = False  # (fatal) the same command can continue the run as it is
    continues: str = ""  # (resumes) how: the stopping error's `continues`

    def row(self, folder: Path) -> dict[str, Any]:
        """Its results.jsonl line."""
        o = self.outcome or Outcome()
        row: dict[str, Any] = {"id": self.unit.id, "status": self.status, "prediction": o.prediction,
                               "gold": self.unit.gold, "explanation": o.explanation,
                               "transcript": os.path.relpath(self.transcript, folder)}
        if self.unit.variant:
            row["variant"] = dict(self.unit.variant)
        return {**row, **o.summary}


def _prior(path: Path, unit: Unit, models: Mapping[str, RoleModel], setup: RunSetup) -> Optional[Transcript]:
    """The unit's transcript if it holds a run to continue (or a finished one), checked."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    try:
        prior = load(path)
    except TranscriptError as exc:
        if "has no events" in str(exc):
            return None
        raise
    if prior.migrated_from is not None:  # an older moot's unfinished transcript: keep it, start afresh
        if prior.completed:
            return prior
        os.replace(path, path.with_name(f"{path.stem}.v{prior.migrated_from}.jsonl"))
        return None
    started = prior.started
    if started.scenario_content_sha256 and not same_scenario(started.scenario_sha256, started.scenario_content_sha256,
                                                             setup.scenario_sha256, scenario_content_hash(unit.scenario)):
        raise ResumeError(f"{path}: the scenario changed since this run started (its content differs); "
                          "run it with the scenario it started with, or choose another --out")
    recorded = {r: s for r, s in started.models.items()}
    wanted = {r: m.spec for r, m in models.items()}
    if recorded and recorded != wanted and not setup.allow_model_change:
        changed = ", ".join(f"{r}: {recorded.get(r)} -> {wanted.get(r)}" for r in sorted(set(recorded) | set(wanted))
                            if recorded.get(r) != wanted.get(r))
        raise ResumeError(f"{path}: this run started with other models ({changed}); continue it with the same "
                          "models, or pass --allow-model-change to mix them (recorded in the transcript)")
    return prior


async def run_unit(setup: RunSetup, unit: Unit, folder: RunFolder, engine: ModelEngine,
                   models: Mapping[str, RoleModel], listener: Optional[Listener] = None) -> UnitResult:
    """Run (or continue) one unit in `folder`; see the module docstring."""
    protocol = setup.protocol
    path = folder.transcript_path(unit.id)
    prior = _prior(path, unit, models, setup)
    if prior is not None and prior.completed:
        return _from_transcript(unit, prior, path)
    log = EventLog(path, prior.next_seq if prior else 1, fsync=protocol.durable)
    live = LiveTurn(path, last_seq=prior.events[-1].seq if prior else 0)
    live.close()  # one a killed run left behind
    ctx = UnitContext(unit, engine, models, log, prior, Listeners(listener, live), setup.chats,
                      setup.seats_of(unit, path), protocol.expected(unit.scenario))
    setup.stop.contexts.add(ctx)
    started = time.monotonic()
    try:
        if prior is None:
            seed = unit.scenario.generation.seed
            ctx.record(started_event(protocol, unit, setup.scenario_path, setup.scenario_sha256,
                                     scenario_content_hash(unit.scenario), models, setup.backends, seed))
        else:
            wanted = {r: m.spec for r, m in models.items()}
            ctx.record(RunResumed(turns_kept=len(prior.messages), models=wanted,
                                  models_changed=wanted != prior.started.models))
        return await _run(setup, unit, ctx, path, started)
    finally:
        setup.stop.contexts.discard(ctx)
        log.close()
        live.close()


async def _run(setup: RunSetup, unit: Unit, ctx: UnitContext, path: Path, started: float) -> UnitResult:
    fatal = resumes = False
    continues = ""
    try:
        outcome = await setup.protocol.run(unit.scenario, ctx)
    except asyncio.CancelledError:
        ctx.cancellation.cancel()
        ctx.record_answered()
        _finish(ctx, "interrupted", setup.stop.reason or "interrupted by the user", started)
        raise
    except ModelCallError as exc:
        fatal = isinstance(exc, FatalModelError)
        resumes = fatal and getattr(exc, "resumes", False)
        continues = getattr(exc, "continues", "") if resumes else ""
        await ctx.settle()
        ctx.record(Error(speaker=exc.role, stage="model_call", cause=exc.cause,
                         attempts=exc.attempts))
        outcome = Outcome(status="failed", stop_reason=f"error: {exc.cause}")
    except Exception as exc:  # noqa: BLE001 - recorded; other units go on
        if is_environment_error(exc):  # the run stops (exit 3); this unit resumes once the disk takes writes
            _try_record(ctx, Error(stage="environment", cause=describe(exc)))
            raise
        if setup.stop.reason is not None:  # a cancelled group chat ends with its own error
            ctx.record_answered()
            _finish(ctx, "interrupted", setup.stop.reason, started)
            raise asyncio.CancelledError() from None
        await ctx.settle()
        ctx.record(Error(stage="run", cause=describe(exc)))
        outcome = Outcome(status="failed", stop_reason=f"error: {describe(exc)}")
    if outcome.prediction is not None and outcome.status == "completed":
        ctx.record(OutcomeEvent(prediction=outcome.prediction, explanation=outcome.explanation,
                                raw=outcome.raw, gold=unit.gold, decided_by=outcome.decided_by))
    _finish(ctx, outcome.status, outcome.stop_reason or outcome.status, started)
    cause = outcome.stop_reason if outcome.status != "completed" else ""
    return UnitResult(unit, outcome.status, outcome, path, cause, fatal, resumes, continues)


def _try_record(ctx: UnitContext, event: Error) -> None:
    """Record `event` if the disk still takes it (the failed write may have been another file's)."""
    try:
        ctx.record(event)
    except OSError:
        pass


def _finish(ctx: UnitContext, status: Status, reason: str, started: float) -> None:
    ctx.record(RunFinished(status=status, stop_reason=reason, wall_s=round(time.monotonic() - started, 3),
                           totals=totals_of(ctx.events)))


def _from_transcript(unit: Unit, transcript: Transcript, path: Path) -> UnitResult:
    """A completed unit, read back (nothing is run)."""
    found = transcript.outcome
    finished = transcript.finished
    outcome = Outcome(prediction=found.prediction if found else None,
                      explanation=found.explanation if found else "", raw=found.raw if found else None,
                      stop_reason=finished.stop_reason if finished else "")
    return UnitResult(unit, "completed", outcome, path)


def run_attributes(setup: RunSetup, folder: Path) -> dict[str, Any]:
    """A run's span: its scenario file, protocol and folder (its models are added as units start)."""
    return {"moot.scenario": setup.scenario_path, "moot.protocol": setup.protocol.name, "moot.run_folder": str(folder)}


def unit_attributes(unit: Unit, models: Mapping[str, RoleModel], traced: set[str]) -> dict[str, Any]:
    """A unit's span: its id (an item's, in a dataset run) and its models by spec, which join the
    run's (`traced`). Never a key: a spec names a model, the backend options hold the keys."""
    specs = sorted(f"{role}={model.spec}" for role, model in models.items())
    traced.update(specs)
    return {"moot.unit.id": unit.id, "moot.models": specs}


@dataclass
class BatchOutcome:
    """How a batch ended. Result rows stay on disk (results.jsonl), so memory does not grow with
    the number of units; `rows()` reads them back."""

    folder: Path
    done: int
    failed: list[UnitResult]
    stopped: Optional[str] = None  # why the batch stopped early (a fatal error), if it did
    interrupted: bool = False
    resumes: bool = False  # (stopped) the same command can continue the run as it is
    continues: str = ""  # (resumes) how, if not by the same command (a higher --max-cost)

    def rows(self) -> Iterator[ResultRow]:
        return result_rows(self.folder)


Progress = Callable[[UnitResult], None]


async def run_units(setup: RunSetup, units: Iterable[Unit], folder: RunFolder, engine: ModelEngine,
                    models_of: Callable[[Unit], Mapping[str, RoleModel]], *, in_flight: int,
                    listener: Optional[Listener] = None, progress: Optional[Progress] = None) -> BatchOutcome:
    """Run every unit without a result row, at most `in_flight` at once (see the module docstring)."""
    done = set(folder.results())
    failed: list[UnitResult] = []
    stopped: list[UnitResult] = []
    todo = (u for u in units if u.id not in done)

    async def worker() -> None:
        for unit in todo:
            if stopped:
                return
            models = models_of(unit)
            with engine.unit(), span("moot.unit", lambda: unit_attributes(unit, models, traced)) as opened:
                result = await run_unit(setup, unit, folder, engine, models, listener)
                if opened is not None:
                    opened.set_attribute("moot.unit.status", result.status)
            if result.status == "completed":
                folder.append_result(result.row(folder.path))
                done.add(unit.id)
            else:
                failed.append(result)
                if result.fatal:
                    stopped.append(result)
            if progress is not None:
                progress(result)

    traced: set[str] = set()  # the run's models (ROLE=SPEC), while tracing is on
    with span("moot.run", lambda: run_attributes(setup, folder.path)) as run_span:
        workers = [asyncio.ensure_future(worker()) for _ in range(max(1, in_flight))]  # their units: its children
        try:
            await asyncio.gather(*workers)
        except BaseException as exc:  # Ctrl-C, or a disk that refuses writes: no unit goes on alone
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            if isinstance(exc, asyncio.CancelledError):
                return BatchOutcome(folder.path, len(done), failed, interrupted=True)
            raise
        finally:
            await setup.chats.close()
            if run_span is not None:
                run_span.set_attribute("moot.models", sorted(traced))
    first = stopped[0] if stopped else None
    return BatchOutcome(folder.path, len(done), failed, first.cause if first else None,
                        resumes=first is not None and first.resumes, continues=first.continues if first else "")
