"""Transcripts: append-only JSONL event logs, read strictly and bounded, written so a kill loses nothing.

Reading (moot.log.jsonl): the file is read as a stream, one line at a time, each checked before
it is trusted, so what is not a transcript is refused at its first line without reading on, and
memory holds the events, never the file. Every line is one event (moot.log.events, and the
protocols' own: moot.log.registry). A blank line is harmless; a torn last line (its writer was
killed mid-write) is left out; anything else that does not read — a line too long, a garbled
line, an unknown event, a duplicated or out-of-order sequence number, a second `run_started` — is
an error naming the file and line, never silently skipped. Transcripts of an older schema are
upgraded as they are read (moot.log.migrations), so runs of earlier versions keep loading.
`load` gives the whole transcript; `Reading` the events one by one.

Writing: `EventLog` numbers, timestamps and appends events, one write per call (a turn is written
whole), fsynced when the log is the only copy of the run. Before appending to an existing file it
moves a torn last line aside to FILE.torn, so the next event starts on a fresh line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import chain
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, TypeVar

from pydantic import ValidationError

from moot.safety.diskio import named
from moot.log.events import (
    SCHEMA_VERSION, Call, EventBase, Message, Outcome, RunFinished, RunResumed, RunStarted, TranscriptError,
)
from moot.log.jsonl import JsonLines, set_aside_torn_tail
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


FIRST = ("run_started", "item_started")  # what a transcript starts with (item_started: schema 1 items)


class Reading:
    """A transcript's events as they are read, each checked as it comes (module docstring):
    iterate for (file line, event); `version` (the schema on disk) once the first is read,
    `torn` once the last is."""

    def __init__(self, path: str | Path, events: EventRegistry = EVENTS):
        self.path, self.events = Path(path), events
        self.rows = JsonLines(self.path, TranscriptError, "event", "a moot transcript")
        self.version = SCHEMA_VERSION

    @property
    def torn(self) -> bool:
        return self.rows.torn

    def __iter__(self) -> Iterator[tuple[int, EventBase]]:
        rows = iter(self.rows)
        first = next(rows, None)
        if first is None:
            raise TranscriptError(f"{self.path}:1: not a moot transcript (it has no events)")
        if first[1].get("type") not in FIRST:
            raise TranscriptError(f"{self.path}:{first[0]}: not a moot transcript (first event must be run_started)")
        self.version, upgraded = upgrade(self.path, chain([first], rows), self.events)
        validated = ((n, _validate(self.path, n, data, self.events)) for n, data in upgraded)
        return _ordered(self.path, validated, strict_seq=self.version >= 1)


def load(path: str | Path, events: EventRegistry = EVENTS) -> Transcript:
    """Load a transcript strictly (see the module docstring); older schemas are migrated."""
    reading = Reading(path, events)
    found = list(reading)
    return Transcript(reading.path, [e for _, e in found], reading.torn,
                      reading.version if reading.version < SCHEMA_VERSION else None, [n for n, _ in found])


def _validate(path: Path, number: int, data: Any, events: EventRegistry) -> EventBase:
    try:
        return events.validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(map(str, first["loc"]))
        raise TranscriptError(f"{path}:{number}: bad event: {where}: {first['msg']}") from None


def _ordered(path: Path, rows: Iterator[tuple[int, EventBase]], strict_seq: bool) -> Iterator[tuple[int, EventBase]]:
    """The events as they come, checked: one run_started, first; sequence numbers rising by one
    (a duplicated, reordered or missing event is an error naming its line)."""
    line, previous = next(rows)
    if not isinstance(previous, RunStarted):
        raise TranscriptError(f"{path}:{line}: not a moot transcript (first event must be run_started)")
    yield line, previous
    for line, event in rows:
        if isinstance(event, RunStarted):
            raise TranscriptError(f"{path}:{line}: a second run_started (two runs in one transcript)")
        if strict_seq and event.seq != previous.seq + 1:
            raise TranscriptError(f"{path}:{line}: " + _misordered(previous.seq, event.seq, next(rows, None)))
        yield line, event
        previous = event


def _misordered(before: int, seq: int, following: Optional[tuple[int, EventBase]]) -> str:
    """What is wrong with an event numbered `seq` after one numbered `before` (the event after it,
    if any, tells a swap from a gap)."""
    if seq == before:
        return f"duplicated event (seq {seq} again)"
    if seq < before:
        return f"event out of order (seq {seq} after {before})"
    if following is not None and following[1].seq == before + 1:
        return f"event out of order (seq {seq} before {before + 1})"
    return f"events missing before this one (seq jumps from {before} to {seq})"


class EventLog:
    """Appends numbered, timestamped events to a JSONL file; each `append` is one write.

    `fsync`: make each append durable before returning (a conference's log is its only copy;
    an item's calls are also in the reply cache, so its log only flushes)."""

    def __init__(self, path: str | Path, next_seq: int = 1, fsync: bool = True):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            set_aside_torn_tail(self.path, TranscriptError)
            self._file = open(self.path, "a", encoding="utf-8")
        except OSError as exc:
            raise named(exc, self.path) from None
        self._seq, self._fsync = next_seq, fsync
        self._refused: Optional[OSError] = None

    def append(self, *events: EventBase) -> None:
        """One write, all or nothing. A disk that refuses it raises an OSError naming the file, and
        the log takes no more: what reached the disk of this write is cut off again, so a call is
        never kept without the message written with it (a resumed unit would serve the call from
        the log and never say its turn). If even that fails, what is left is set aside as a torn
        line when the unit resumes; writing on after it could glue later events to it."""
        if self._refused is not None:
            raise self._refused
        stamp = now()
        for number, event in enumerate(events, self._seq):
            event.seq, event.ts = number, stamp
        text = "".join(e.model_dump_json() + "\n" for e in events)  # one that cannot be written takes no number
        self._seq += len(events)
        begun = os.fstat(self._file.fileno()).st_size  # every append is flushed: the file ends here
        try:
            self._file.write(text)
            self._file.flush()
            if self._fsync:
                os.fsync(self._file.fileno())
        except OSError as exc:
            self._refused = named(exc, self.path)
            self.close()  # drops what could not be written
            self._cut_back(begun)
            raise self._refused from None

    def _cut_back(self, size: int) -> None:
        """Take off what a refused write left past `size` (shrinking needs no space)."""
        try:
            os.truncate(self.path, size)
        except OSError:  # the torn tail is then set aside when the unit resumes
            pass

    def close(self) -> None:
        try:
            self._file.close()
        except OSError:  # what it could not flush was reported by append
            pass


def dump_events(events: Iterable[EventBase]) -> list[dict[str, Any]]:
    return [e.model_dump() for e in events]
