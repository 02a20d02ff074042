"""Per-item transcripts of stage protocols (COLA, ...): typed, append-only JSONL events.

One file per item. Every model call is one `call` event (role, stage, model, the exact messages,
reply, usage, latency, whether it came from the cache); the item ends with `item_finished`
(prediction, explanation, raw reply) or `item_failed`. Events reuse the conference transcript's
base class (sequence numbers, timestamps).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, TypeAdapter

from moot.transcript import EventBase, EventWriter, TranscriptError, Usage, is_json

ITEM_SCHEMA_VERSION = 1


class ItemStarted(EventBase):
    type: Literal["item_started"] = "item_started"
    schema_version: int = ITEM_SCHEMA_VERSION
    protocol: str
    scenario_path: str
    scenario_sha256: str
    item_id: str
    inputs: dict[str, Any]
    gold: Optional[str] = None
    models: dict[str, str] = {}


class Call(EventBase):
    type: Literal["call"] = "call"
    stage: str
    role: str
    model: str
    messages: list[dict[str, Any]]
    reply: str
    usage: Usage = Usage()
    latency_s: float = 0.0
    attempts: int = 1
    cached: bool = False


class ItemFinished(EventBase):
    type: Literal["item_finished"] = "item_finished"
    prediction: str
    explanation: str = ""
    raw: Optional[str] = None
    wall_s: float = 0.0


class ItemFailed(EventBase):
    type: Literal["item_failed"] = "item_failed"
    stage: str
    role: Optional[str] = None
    cause: str
    attempts: int = 0


ItemEvent = Annotated[Union[ItemStarted, Call, ItemFinished, ItemFailed], Field(discriminator="type")]
_ITEM_EVENT = TypeAdapter(ItemEvent)


class ItemRecorder(EventWriter):
    """Writes one item's events and passes each to a listener (console printing, progress).

    Lines are flushed as they happen (a killed process loses nothing written) but not fsynced:
    an item is committed by its result line and an unfinished one is re-run with its replies
    from the cache, so an fsync per call would only stall the event loop all items share.
    """

    def __init__(self, path: Path, listener=None):
        super().__init__(path, "w", fsync=False)  # a re-run item starts afresh
        self.listener = listener
        self.events: list[EventBase] = []

    def record(self, *events: EventBase) -> None:
        self.append(*events)
        self.events.extend(events)
        if self.listener is not None:
            for event in events:
                self.listener(event)


def load_item(path: str | Path) -> list[EventBase]:
    """Events of one item transcript; a torn last line (killed writer) is dropped."""
    path = Path(path)
    lines = path.read_bytes().split(b"\n")
    events = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            events.append(_ITEM_EVENT.validate_json(line))
        except ValueError as exc:
            if number == len(lines) and not is_json(line):
                break
            raise TranscriptError(f"{path}:{number}: bad event: {str(exc).splitlines()[0]}") from None
    return events
