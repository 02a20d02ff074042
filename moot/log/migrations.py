"""Upgrading transcripts of earlier moot versions, so every run ever written keeps loading.

- schema 0 (pre-release conferences): messages kept their text as `text` and had no `calls`.
- schema 1 conferences: the same events as schema 2 (which only added events and fields).
- schema 1 item transcripts (COLA, S2MAD, negotiation before one event log): `item_started`,
  `call`, `item_finished` / `item_failed`. They become `run_started`, `call` + the `message` it
  contributed, `outcome` + `run_finished` / `error` + `run_finished`, renumbered in order.
- schema 2: a message's `topic` is its `part` (the core names no protocol's vocabulary).

Then each protocol event type older than its registered version is upgraded by the protocol's
own steps (moot.log.registry). Migration works on decoded JSON rows `(line, dict)` before
validation, as they are read (moot.log.transcript), so a problem in an old file is still reported
at its own line.
"""

from __future__ import annotations

from pathlib import Path
from itertools import chain
from typing import Any, Callable, Iterator

from moot.log.events import SCHEMA_VERSION, TranscriptError
from moot.log.registry import EventRegistry

Row = tuple[int, Any]


def upgrade(path: Path, rows: Iterator[Row], events: EventRegistry) -> tuple[int, Iterator[Row]]:
    """(the core schema version on disk, the rows as the current schema and event types have them);
    `rows` starts with the run's first event and is read only as the result is."""
    version, core = _core(path, rows)
    first = next(core)
    written = first[1].get("event_versions") if first[1].get("type") == "run_started" else None
    return version, events.upgrade(path, chain([first], core), written if isinstance(written, dict) else {})


def _core(path: Path, rows: Iterator[Row]) -> tuple[int, Iterator[Row]]:
    line, first = next(rows)
    rows = chain([(line, first)], rows)
    if first.get("type") == "item_started":
        return 1, _items_v1(path, rows)
    version = first.get("schema_version", 0) if first.get("type") == "run_started" else SCHEMA_VERSION
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise TranscriptError(f"{path}:{line}: schema_version {version} is newer than this moot "
                              f"reads ({SCHEMA_VERSION}); upgrade moot")
    return version, _stepped(rows, version)


def _stepped(rows: Iterator[Row], version: int) -> Iterator[Row]:
    """Each row brought from `version` to SCHEMA_VERSION (the first, run_started, says so)."""
    for n, (line, data) in enumerate(rows):
        for step in range(version, SCHEMA_VERSION):
            data = STEPS[step](data)
        yield line, ({**data, "schema_version": SCHEMA_VERSION} if n == 0 and version < SCHEMA_VERSION else data)


def _v0_message_text(event: dict[str, Any]) -> dict[str, Any]:
    if event.get("type") == "message" and "text" in event:
        event = {k: v for k, v in event.items() if k != "text"} | {"content": event["text"]}
        event.setdefault("calls", 1)
    return event


def _v1_unchanged(event: dict[str, Any]) -> dict[str, Any]:
    return event


def _v2_message_part(event: dict[str, Any]) -> dict[str, Any]:
    if event.get("type") == "message" and "topic" in event:
        event = {("part" if k == "topic" else k): v for k, v in event.items()}
    return event


# from_version -> step that rewrites one event of that version into the next version
STEPS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _v0_message_text, 1: _v1_unchanged,
                                                                2: _v2_message_part}


def _items_v1(path: Path, rows: Iterator[Row]) -> Iterator[Row]:
    """An item transcript of schema 1 as a run of schema 2, renumbered in order (its own numbering
    is checked first: a row out of order or duplicated is an error at its line)."""
    turn, gold, seq, before = 0, None, 0, None
    for line, data in rows:  # each a JSON object (moot.log.jsonl)
        if isinstance(before, int) and isinstance(data.get("seq"), int) and data["seq"] != before + 1:
            raise TranscriptError(f"{path}:{line}: event out of order or duplicated (seq {data['seq']} after {before})")
        before = data.get("seq")
        kind, common = data.get("type"), {"ts": data.get("ts", "")}
        if kind == "item_started":
            gold = data.get("gold")
            out = [{**common, "type": "run_started", "schema_version": SCHEMA_VERSION,
                    "run_id": f"v1-{data.get('item_id', '')}", "protocol": data.get("protocol", "?"),
                    "scenario_path": data.get("scenario_path", ""), "scenario_sha256": data.get("scenario_sha256", ""),
                    "scenario": {}, "models": data.get("models", {}), "unit": data.get("item_id", ""),
                    "inputs": data.get("inputs", {}), "gold": data.get("gold")}]
        elif kind == "call":
            turn += 1
            out = [{k: v for k, v in data.items() if k != "seq"},
                   {**common, "type": "message", "turn": turn, "speaker": data.get("role", ""),
                    "role": data.get("role", ""), "action": data.get("stage", ""), "content": data.get("reply", ""),
                    "model": data.get("model", ""), "usage": data.get("usage", {}),
                    "latency_s": data.get("latency_s", 0.0), "calls": data.get("attempts", 1)}]
        elif kind == "item_finished":
            out = [{**common, "type": "outcome", "prediction": data.get("prediction", ""),
                    "explanation": data.get("explanation", ""), "raw": data.get("raw"), "gold": gold},
                   {**common, "type": "run_finished", "status": "completed", "stop_reason": "item finished",
                    "wall_s": data.get("wall_s", 0.0)}]
        elif kind == "item_failed":
            out = [{**common, "type": "error", "speaker": data.get("role"), "stage": data.get("stage", ""),
                    "cause": data.get("cause", ""), "attempts": data.get("attempts", 0)},
                   {**common, "type": "run_finished", "status": "failed", "stop_reason": data.get("cause", "")}]
        else:
            out = [data]
        for event in out:
            seq += 1
            yield line, {**event, "seq": seq}
