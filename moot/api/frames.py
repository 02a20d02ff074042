"""Saved runs as pandas data frames, for notebooks: one row per run, unit, event or model call.

Each function takes run folders, transcript files, folders holding run folders (an experiment's
cells) or opened runs (moot.api.saved), and reads them unit by unit: `runs_df` and `units_df`
read results rows (transcripts only for units that did not finish, or for a protocol measure
that needs one); `events_df` and `calls_df` hold one transcript in memory at a time.
"""

from __future__ import annotations

from functools import lru_cache
from types import UnionType
from typing import Any, Iterator, Literal, Optional, Sequence, Union, get_args, get_origin

import pandas as pd

from moot.api.saved import RunsLike, SavedRun, SavedUnit, open_runs
from moot.log.events import Call, EventBase, Usage
from moot.log.registry import type_name
from moot.saved.run import models_text

Row = dict[str, Any]
RUN_COLUMNS = ["run", "name", "protocol", "scenario", "dataset", "models", "status", "units_done", "units_planned",
               "units_failed", "headline", "headline_value", "created", "last_invoked", "rescored_from"]
UNIT_COLUMNS = ["run", "protocol", "id", "status", "prediction", "gold", "correct", "variant", "seed", "transcript"]
EVENT_COLUMNS = ["run", "unit", "seq", "ts", "type"]
CALL_COLUMNS = ["run", "unit", "seq", "ts", "role", "stage", "model", "kind", "method", "prompt_tokens",
                "completion_tokens", "latency_s", "attempts", "cached", "finish_reason", "evaluated", "threads",
                "extra_buffers"]


def runs_df(runs: RunsLike) -> pd.DataFrame:
    """One row per run: protocol, scenario, dataset, models, status (complete / partial /
    unknown), units done / planned / failed, the headline metric and its value, dates."""
    return frame([run_row(run) for run in open_runs(runs)], RUN_COLUMNS, dates=("created", "last_invoked"))


def run_row(run: SavedRun) -> Row:
    meta, summary = run.source.record, run.summary
    metrics = run.metrics()
    return {
        "run": str(run.path), "name": run.name, "protocol": run.protocol,
        "scenario": meta.scenario_name or None, "dataset": meta.dataset_name or None,
        "models": models_text(meta.models or {}), "status": run.status, "units_done": len(summary.results),
        "units_planned": summary.planned, "units_failed": summary.failed, "headline": metrics.headline,
        "headline_value": metrics.value, "created": meta.created, "last_invoked": meta.last_invoked,
        "rescored_from": meta.rescored.from_ if meta.rescored else None,
    }


def units_df(runs: RunsLike) -> pd.DataFrame:
    """One row per unit: its run, id, status, prediction, gold, correct, each measure its protocol
    declares (moot.contract.metrics), variant (`seed=2`), seed, transcript file."""
    return frame([unit_row(run, unit) for run in open_runs(runs) for unit in run.units()], UNIT_COLUMNS)


def unit_row(run: SavedRun, unit: SavedUnit) -> Row:
    variant, correct = unit.variant, unit.correct
    return {"run": str(run.path), "protocol": run.protocol, "id": unit.id, "status": unit.status,
            "prediction": unit.prediction, "gold": unit.gold, "correct": None if correct is None else float(correct), **unit.measures(),
            "variant": ",".join(f"{k}={v}" for k, v in variant.items()) or None, "seed": unit.seed,
            "transcript": str(unit.path)}


def events_df(runs: RunsLike, types: Optional[Sequence[str]] = None) -> pd.DataFrame:
    """One row per event (`types`: only these, e.g. ["message"]): run, unit, seq, ts, type and the
    event's own plain fields (a message's speaker, role, action, round, content, tokens, ...;
    a protocol event's fields). Nested records (a call's messages, run_started's scenario) are
    left out: calls_df has the calls, the transcript everything."""
    wanted = set(types) if types is not None else None
    rows = [event_row(run, unit, event) for run, unit, event in _events(runs)
            if wanted is None or type_name(type(event)) in wanted]
    return frame(rows, EVENT_COLUMNS)


def event_row(run: SavedRun, unit: SavedUnit, event: EventBase) -> Row:
    row: Row = {name: getattr(event, name) for name in plain_fields(type(event))}
    usage = getattr(event, "usage", None)
    if isinstance(usage, Usage):
        row.update(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens)
    return {**row, "run": str(run.path), "unit": unit.id}


@lru_cache(maxsize=None)
def plain_fields(model: type[EventBase]) -> tuple[str, ...]:
    """The fields of an event type that hold one plain value (text, a number, a flag)."""
    return tuple(name for name, info in model.model_fields.items() if _plain(info.annotation))


def _plain(annotation: object) -> bool:
    if annotation in (str, int, float, bool, type(None)):
        return True
    origin = get_origin(annotation)
    if origin is Literal:
        return True
    return origin in (Union, UnionType) and all(_plain(arg) for arg in get_args(annotation))


def calls_df(runs: RunsLike) -> pd.DataFrame:
    """One row per model call: role, stage, model, kind, how a closed answer was read (`method`),
    tokens, latency, attempts, whether the reply came from the cache, and (embedded model) the
    prompt tokens it evaluated, the CPU threads it ran on and whether extra buffers were used."""
    rows = [call_row(run, unit, event) for run, unit, event in _events(runs) if isinstance(event, Call)]
    return frame(rows, CALL_COLUMNS)


def call_row(run: SavedRun, unit: SavedUnit, call: Call) -> Row:
    detail = call.detail
    return {"run": str(run.path), "unit": unit.id, "seq": call.seq, "ts": call.ts, "role": call.role,
            "stage": call.stage, "model": call.model, "kind": call.kind,
            "method": detail.method if detail is not None and detail.method else None,
            "prompt_tokens": call.usage.prompt_tokens, "completion_tokens": call.usage.completion_tokens,
            "latency_s": call.latency_s, "attempts": call.attempts, "cached": call.cached, "cost_usd": call.cost_usd,
            "finish_reason": call.finish_reason, "evaluated": detail.evaluated if detail is not None else None,
            "threads": detail.threads if detail is not None else None,
            "extra_buffers": detail.extra_buffers if detail is not None else None}


def _events(runs: RunsLike) -> Iterator[tuple[SavedRun, SavedUnit, EventBase]]:
    for run in open_runs(runs):
        for unit, event in run.events():
            yield run, unit, event


def frame(rows: list[Row], first: Sequence[str], dates: Sequence[str] = ()) -> pd.DataFrame:
    """The rows as a frame, `first` columns first (present even with no rows), then the rest in
    the order they appear; `dates` parsed as UTC times."""
    seen = dict.fromkeys([*first, *(key for row in rows for key in row)])
    df = pd.DataFrame(rows, columns=list(seen))
    for column in dates:
        df[column] = pd.to_datetime(df[column], utc=True, errors="coerce", format="ISO8601")
    return df
