"""Transcripts: typed, versioned, append-only JSONL event logs.

Every line is one event with a `type`, a sequence number and a timestamp. The writer appends
each turn's events in one write and fsyncs, so a run killed at any moment leaves a file whose
complete lines all load; a torn last line is dropped by the reader. Replay, reports, metrics
and re-scoring read these events and never re-run a model. Transcripts of an older schema
version are upgraded on load by the steps in MIGRATIONS, so old runs stay readable.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Callable, Iterable, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

SCHEMA_VERSION = 1


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt_tokens: int = 0
    completion_tokens: int = 0


class EventBase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seq: int = 0
    ts: str = ""


class RunStarted(EventBase):
    type: Literal["run_started"] = "run_started"
    schema_version: int = SCHEMA_VERSION
    run_id: str
    protocol: str
    scenario_path: str
    scenario_sha256: str  # the file's bytes (cited)
    scenario: dict[str, Any]
    scenario_content_sha256: Optional[str] = None  # moot.scenario.scenario_content_hash; resume compares it
    models: dict[str, str]
    settings: dict[str, dict[str, Any]]
    seed: Optional[int] = None
    versions: dict[str, str] = {}


class RunResumed(EventBase):
    type: Literal["run_resumed"] = "run_resumed"
    turns_kept: int
    models: dict[str, str] = {}


class Message(EventBase):
    type: Literal["message"] = "message"
    turn: int
    speaker: str
    role: str
    action: str
    topic: Optional[int]
    round: int
    content: str
    model: str
    usage: Usage = Usage()
    latency_s: float = 0.0
    calls: int = 1
    decision: Optional[str] = None


class Verdict(EventBase):
    type: Literal["verdict"] = "verdict"
    turn: int
    speaker: str
    topic: Optional[int]
    round: int
    verdict: Literal["AGREEMENT", "MORE_DEBATE", "NEXT_TOPIC", "UNPARSED"]
    reason: str = ""
    raw: Optional[str] = None
    error: Optional[str] = None


class Score(EventBase):
    type: Literal["score"] = "score"
    turn: int
    speaker: str
    topic: Optional[int]
    model: str
    kind: Literal["debate", "judge_decision"] = "debate"
    scores: dict[str, int] = {}
    overall: Optional[int] = None
    rationale: str = ""
    parsed: bool = True
    raw: Optional[str] = None
    error: Optional[str] = None


class TopicClosed(EventBase):
    type: Literal["topic_closed"] = "topic_closed"
    topic: int
    rounds: int
    closed_by: Literal["agreement", "round_cap", "moderator"]


class Error(EventBase):
    type: Literal["error"] = "error"
    speaker: Optional[str] = None
    stage: str
    cause: str
    attempts: int = 0


class RunFinished(EventBase):
    type: Literal["run_finished"] = "run_finished"
    status: Literal["completed", "failed", "interrupted"]
    stop_reason: str
    wall_s: float
    totals: dict[str, Any] = {}


Event = Annotated[
    Union[RunStarted, RunResumed, Message, Verdict, Score, TopicClosed, Error, RunFinished],
    Field(discriminator="type"),
]
_EVENT = TypeAdapter(Event)


class TranscriptError(ValueError):
    """A transcript that cannot be read; the message names the file and line."""


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class EventWriter:
    """Numbers, timestamps and writes events as JSONL, one write per call (a turn is all or nothing).

    `fsync` makes each call durable before it returns: conference turns are the only copy of a
    run, while per-item transcripts can be redone from the reply cache and skip it.
    """

    def __init__(self, path: str | Path, mode: str = "a", next_seq: int = 1, fsync: bool = True):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, mode, encoding="utf-8")
        self._seq, self._fsync = next_seq, fsync

    def append(self, *events: EventBase) -> None:
        for event in events:
            event.seq, event.ts = self._seq, now()
            self._seq += 1
        self._file.write("".join(e.model_dump_json() + "\n" for e in events))
        self._file.flush()
        if self._fsync:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


class TranscriptWriter(EventWriter):
    """Appends a conference run's events; each `append` call is one write + fsync."""

    def __init__(self, path: str | Path, next_seq: int = 1):
        super().__init__(path, "a", next_seq, fsync=True)


class Transcript:
    """The events of one run, as loaded from disk."""

    def __init__(self, path: Path, events: list[EventBase], torn_tail: bool,
                 migrated_from: Optional[int] = None):
        self.path, self.events, self.torn_tail = path, events, torn_tail
        self.migrated_from = migrated_from  # schema version on disk, when older than SCHEMA_VERSION

    @property
    def started(self) -> RunStarted:
        return self.events[0]  # load() guarantees it

    def of_type(self, cls: type[EventBase]) -> list:
        return [e for e in self.events if isinstance(e, cls)]

    @property
    def finished(self) -> Optional[RunFinished]:
        done = self.of_type(RunFinished)
        return done[-1] if done else None

    @property
    def topics(self) -> list[str]:
        return list(self.started.scenario.get("topics", []))

    @property
    def speakers(self) -> list[tuple[str, str]]:
        """(role, agent name) in the scenario's speaking order, read from the recorded scenario."""
        s = self.started.scenario
        agents = [("moderator", s.get("moderator"))] + [("participant", p) for p in s.get("participants", [])]
        agents += [(role, s.get(role)) for role in ("judge", "evaluator")]
        return [(role, a["name"]) for role, a in agents if isinstance(a, dict) and "name" in a]


def load(path: str | Path) -> Transcript:
    """Load a transcript; a torn (incomplete) last line is dropped, any other bad line is an error.

    Transcripts written by older moot versions are migrated event by event before validation.
    """
    path = Path(path)
    try:
        raw_lines = path.read_bytes().split(b"\n")
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read transcript: {exc.strerror or exc}") from None
    torn = raw_lines[-1] != b""
    body = raw_lines[:-1]
    rows = [(n, _decode(path, n, line)) for n, line in enumerate(body, 1) if line.strip()]
    if torn and raw_lines[-1].strip():
        torn = not is_json(raw_lines[-1])
        if not torn:
            rows.append((len(body) + 1, _decode(path, len(body) + 1, raw_lines[-1])))
    if not rows or not isinstance(rows[0][1], dict) or rows[0][1].get("type") != "run_started":
        raise TranscriptError(f"{path}:1: not a moot transcript (first event must be run_started)")
    version = rows[0][1].get("schema_version", 0)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise TranscriptError(f"{path}:1: schema_version {version} is newer than "
                              f"this moot reads ({SCHEMA_VERSION}); upgrade moot")
    events = [_validate(path, n, migrate(data, version)) for n, data in rows]
    return Transcript(path, events, torn, migrated_from=version if version < SCHEMA_VERSION else None)


def _v0_message_text(event: dict[str, Any]) -> dict[str, Any]:
    """v0 (pre-release) messages stored their text as `text` and had no `calls` count."""
    if event.get("type") == "message" and "text" in event:
        event = {k: v for k, v in event.items() if k != "text"} | {"content": event["text"]}
        event.setdefault("calls", 1)
    return event


# from_version -> step that rewrites one event dict of that version into the next version.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _v0_message_text}


def migrate(event: Any, version: int) -> Any:
    """Apply every migration step from `version` up to SCHEMA_VERSION to one decoded event."""
    for step in range(version, SCHEMA_VERSION):
        if not isinstance(event, dict):
            break
        event = MIGRATIONS[step](event)
        if event.get("type") == "run_started":
            event = {**event, "schema_version": step + 1}
    return event


def is_json(line: bytes) -> bool:
    """Whether a line decodes; a last line that does not is torn (its writer was killed)."""
    try:
        json.loads(line)
        return True
    except ValueError:
        return False


def _decode(path: Path, number: int, line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError as exc:
        raise TranscriptError(f"{path}:{number}: bad event: not JSON ({exc})") from None


def _validate(path: Path, number: int, data: Any) -> EventBase:
    try:
        return _EVENT.validate_python(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(map(str, first["loc"]))
        raise TranscriptError(f"{path}:{number}: bad event: {where}: {first['msg']}") from None


def dump_events(events: Iterable[EventBase]) -> list[dict[str, Any]]:
    return [e.model_dump() for e in events]
