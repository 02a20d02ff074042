"""Transcripts: append-only JSONL event logs, read strictly and written so a kill loses nothing.

Reading: every line is one event (moot.log.events, and the protocols' own: moot.log.registry). A blank line is harmless; a torn last line (its
writer was killed mid-write) is left out; anything else that does not read — a garbled line, an
unknown event, a duplicated or out-of-order sequence number, a second `run_started` — is an error
naming the file and line, never silently skipped. Transcripts of an older schema are upgraded on
load (moot.log.migrations), so runs of earlier versions keep loading.

Writing: `EventLog` numbers, timestamps and appends events, one write per call (a turn is written
whole), fsynced when the log is the only copy of the run. Before appending to an existing file it
moves a torn last line aside to FILE.torn, so the next event starts on a fresh line.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Optional, TypeVar

from pydantic import ValidationError

from moot.safety.diskio import named
from moot.log.events import (
    SCHEMA_VERSION, Call, EventBase, Message, Outcome, RunFinished, RunResumed, RunStarted, TranscriptError,
)
from moot.log.migrations import upgrade
from moot.log.registry import EVENTS, EventRegistry

E = TypeVar("E", bound=EventBase)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass
class Transcript:
    """The events of one unit's run, as loaded from disk."""

    path: Path
    events: list[EventBase]
    torn_tail: bool = False
    migrated_from: Optional[int] = None  # schema version on disk, when older than SCHEMA_VERSION
    lines: list[int] = field(default_factory=list, repr=False)  # file line of each event

    @property
    def started(self) -> RunStarted:
        first = self.events[0]
        assert isinstance(first, RunStarted)  # load() guarantees it
        return first

    def of_type(self, cls: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, cls)]

    @property
    def finished(self) -> Optional[RunFinished]:
        """The run's end, if its last invocation recorded one (a resume may follow an earlier end)."""
        ends = [i for i, e in enumerate(self.events) if isinstance(e, (RunFinished, RunResumed))]
        last = self.events[ends[-1]] if ends else None
        return last if isinstance(last, RunFinished) else None

    @property
    def completed(self) -> bool:
        return self.finished is not None and self.finished.status == "completed"

    @property
    def outcome(self) -> Optional[Outcome]:
        found = self.of_type(Outcome)
        return found[-1] if found else None

    @property
    def messages(self) -> list[Message]:
        return self.of_type(Message)

    @property
    def calls(self) -> list[Call]:
        return self.of_type(Call)

    @property
    def protocol(self) -> str:
        return self.started.protocol

    @property
    def next_seq(self) -> int:
        return self.events[-1].seq + 1


def read_lines(path: Path) -> tuple[list[tuple[int, bytes]], bool]:
    """(line number, bytes) of the non-blank lines, and whether the last line is torn.

    A last line without its newline that still parses is complete (the cut fell just before the
    newline); one that does not parse is torn and left out."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    raw = data.split(b"\n")
    rows = [(n, line) for n, line in enumerate(raw[:-1], 1) if line.strip()]
    tail = raw[-1]
    torn = bool(tail.strip()) and not is_json(tail)
    if tail.strip() and not torn:
        rows.append((len(raw), tail))
    return rows, torn


def load(path: str | Path, events: EventRegistry = EVENTS) -> Transcript:
    """Load a transcript strictly (see the module docstring); older schemas are migrated."""
    path = Path(path)
    rows, torn = read_lines(path)
    decoded = [(n, _decode(path, n, line)) for n, line in rows]
    if not decoded or not isinstance(decoded[0][1], dict):
        raise TranscriptError(f"{path}:1: not a moot transcript (it has no events)")
    version, decoded = upgrade(path, decoded, events)
    loaded = [_validate(path, n, data, events) for n, data in decoded]
    _check_order(path, decoded, loaded, strict_seq=version >= 1)
    return Transcript(path, loaded, torn, version if version < SCHEMA_VERSION else None,
                      [n for n, _ in decoded])


def is_json(line: bytes) -> bool:
    try:
        json.loads(line)
        return True
    except ValueError:
        return False


def _decode(path: Path, number: int, line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError as exc:
        raise TranscriptError(f"{path}:{number}: garbled event: not JSON ({exc})") from None


def _validate(path: Path, number: int, data: Any, events: EventRegistry) -> EventBase:
    try:
        return events.validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(map(str, first["loc"]))
        raise TranscriptError(f"{path}:{number}: bad event: {where}: {first['msg']}") from None


def _check_order(path: Path, rows: list[tuple[int, Any]], events: list[EventBase], strict_seq: bool) -> None:
    """One run_started, first; sequence numbers rising by one (a duplicated, reordered or
    missing event is an error naming its line)."""
    if not isinstance(events[0], RunStarted):
        raise TranscriptError(f"{path}:{rows[0][0]}: not a moot transcript (first event must be run_started)")
    for (line, _), event in zip(rows[1:], events[1:]):
        if isinstance(event, RunStarted):
            raise TranscriptError(f"{path}:{line}: a second run_started (two runs in one transcript)")
    if not strict_seq:
        return
    present = {event.seq for event in events}
    for (line, _), previous, event in zip(rows[1:], events, events[1:]):
        if event.seq == previous.seq:
            raise TranscriptError(f"{path}:{line}: duplicated event (seq {event.seq} again)")
        if event.seq < previous.seq:
            raise TranscriptError(f"{path}:{line}: event out of order (seq {event.seq} after {previous.seq})")
        if event.seq != previous.seq + 1 and previous.seq + 1 in present:
            raise TranscriptError(f"{path}:{line}: event out of order (seq {event.seq} before {previous.seq + 1})")
        if event.seq != previous.seq + 1:
            raise TranscriptError(f"{path}:{line}: events missing before this one "
                                  f"(seq jumps from {previous.seq} to {event.seq})")


def set_aside_torn_tail(path: Path) -> Optional[bytes]:
    """Before appending: a last line without its newline is either complete (add the newline) or
    torn (move it to PATH.torn and cut it off). Returns the torn bytes, if any."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size == 0:
        return None
    with open(path, "r+b") as f:
        f.seek(max(0, size - 1))
        if f.read(1) == b"\n":
            return None
        f.seek(0)
        data = f.read()
        start = data.rfind(b"\n") + 1
        tail = data[start:]
        if is_json(tail) or not tail.strip():
            f.seek(0, os.SEEK_END)
            f.write(b"\n")
            return None
        with open(path.with_name(path.name + ".torn"), "ab") as aside:
            aside.write(tail + b"\n")
        f.truncate(start)
    return tail


class EventLog:
    """Appends numbered, timestamped events to a JSONL file; each `append` is one write.

    `fsync`: make each append durable before returning (a conference's log is its only copy;
    an item's calls are also in the reply cache, so its log only flushes)."""

    def __init__(self, path: str | Path, next_seq: int = 1, fsync: bool = True):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            set_aside_torn_tail(self.path)
            self._file = open(self.path, "a", encoding="utf-8")
        except OSError as exc:
            raise named(exc, self.path) from None
        self._seq, self._fsync = next_seq, fsync
        self._refused: Optional[OSError] = None

    def append(self, *events: EventBase) -> None:
        """One write. A disk that refuses it raises an OSError naming the file, and the log takes
        no more: what reached the disk is at most a torn line, set aside when the unit resumes;
        writing on after it could glue later events to it."""
        if self._refused is not None:
            raise self._refused
        stamp = now()
        for event in events:
            event.seq, event.ts = self._seq, stamp
            self._seq += 1
        try:
            self._file.write("".join(e.model_dump_json() + "\n" for e in events))
            self._file.flush()
            if self._fsync:
                os.fsync(self._file.fileno())
        except OSError as exc:
            self._refused = named(exc, self.path)
            self.close()  # drops what could not be written
            raise self._refused from None

    def close(self) -> None:
        try:
            self._file.close()
        except OSError:  # what it could not flush was reported by append
            pass


def dump_events(events: Iterable[EventBase]) -> list[dict[str, Any]]:
    return [e.model_dump() for e in events]
