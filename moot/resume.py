"""Where a run continues from: nothing (a fresh run) or the last complete turn of a transcript."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from autogen_agentchat.messages import TextMessage
from autogen_core.models import RequestUsage

from moot.scenario import same_scenario
from moot.transcript import EventBase, Message, Score, TopicClosed, Transcript, Verdict, load
from moot.speaker_selection.conference import ConferencePlan, PolicyError, Turn, walk

NEEDS_COMPANION = {"judge": Verdict, "decide": Verdict, "evaluate": Score}


class ResumeError(ValueError):
    """A transcript that cannot be resumed with this scenario; one line."""


@dataclass
class ResumePoint:
    """Prior turns as the policy sees them, as AutoGen messages, and as transcript events."""

    turns: list[Turn] = field(default_factory=list)
    messages: list[TextMessage] = field(default_factory=list)
    events: list[EventBase] = field(default_factory=list)
    next_seq: int = 1


def resume_point(path: Path, scenario_sha256: str, content_sha256: str, plan: ConferencePlan) -> ResumePoint:
    """Load `path`, cut any torn or incomplete last turn off the file, and return what is kept.

    The scenario must be the one the run started with: same validated content (a comment or
    layout edit of the file is fine); transcripts older than content hashes compare file bytes."""
    transcript = load(path)
    if transcript.migrated_from is not None:
        raise ResumeError(f"{path}: written by an older moot (schema version {transcript.migrated_from}); "
                          "it can be replayed and exported but not resumed")
    started = transcript.started
    if not same_scenario(started.scenario_sha256, started.scenario_content_sha256, scenario_sha256, content_sha256):
        what = "content" if started.scenario_content_sha256 else "file (sha256)"
        raise ResumeError(f"{path}: the scenario changed since this run started (its {what} differs); "
                          "resume with the scenario it started with")
    finished = transcript.finished
    if finished and finished.status == "completed" and transcript.events[-1] is finished:
        raise ResumeError(f"{path}: this run already completed ({finished.stop_reason}); nothing to resume")
    try:
        events = _complete_events(transcript, plan)
        messages = [e for e in events if isinstance(e, Message)]
        turns = [Turn(m.speaker, m.decision) for m in messages]
        walk(plan, turns)
    except PolicyError as exc:
        raise ResumeError(f"{path}: transcript does not follow this scenario's routing: {exc}") from None
    _truncate_after(path, len(events))
    return ResumePoint(turns, [_as_chat(m) for m in messages], events, events[-1].seq + 1)


def _complete_events(transcript: Transcript, plan: ConferencePlan) -> list[EventBase]:
    """Events up to the first turn missing an event of its own: its companion (verdict/score)
    or the topic_closed it implies. A turn is kept whole or not at all."""
    events = transcript.events
    positions = [i for i, e in enumerate(events) if isinstance(e, Message)]
    steps = walk(plan, [Turn(events[i].speaker, events[i].decision) for i in positions])
    for number, index in enumerate(positions):
        event, rest = events[index], events[index + 1:]
        companion = NEEDS_COMPANION.get(event.action)
        if companion and not any(isinstance(e, companion) and e.turn == event.turn for e in rest):
            return events[:index]
        if steps[number + 1].closed_by and not any(isinstance(e, TopicClosed) and e.topic == event.topic
                                                   for e in rest):
            return events[:index]
    return events


def _truncate_after(path: Path, keep_lines: int) -> None:
    """Drop everything after the first `keep_lines` lines (a torn tail or a half-written turn)."""
    data = path.read_bytes()
    offset = 0
    for _ in range(keep_lines):
        offset = data.index(b"\n", offset) + 1
    if offset < len(data):
        with open(path, "r+b") as handle:
            handle.truncate(offset)
            handle.flush()
            os.fsync(handle.fileno())


def _as_chat(event: Message) -> TextMessage:
    meta = {"role": event.role, "action": event.action, "round": str(event.round), "model": event.model,
            "latency_s": f"{event.latency_s:.3f}", "calls": str(event.calls)}
    if event.topic is not None:
        meta["topic"] = str(event.topic)
    if event.decision:
        meta["decision"] = event.decision
    usage = RequestUsage(prompt_tokens=event.usage.prompt_tokens, completion_tokens=event.usage.completion_tokens)
    return TextMessage(content=event.content, source=event.speaker, metadata=meta, models_usage=usage)
