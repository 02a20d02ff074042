"""A transcript regrouped for reading: turns with their verdicts and scores, sections per topic.

Replay, the Markdown export and the HTML export all present a run in this shape; grouping it
once here keeps the three in step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

from moot.summary import totals_of
from moot.events import (
    EventBase, Message, RunFinished, RunResumed, RunStarted, Score, TopicClosed, Verdict,
)
from moot.transcript import Transcript

COMPANIONS = (Verdict, Score, TopicClosed)


@dataclass
class Turn:
    """One turn: a message and the events recorded with it, or a note between turns
    (an error, a resume) that has no message."""

    number: int
    events: list[EventBase] = field(default_factory=list)

    @property
    def message(self) -> Optional[Message]:
        first = self.events[0]
        return first if isinstance(first, Message) else None

    @property
    def topic(self) -> Optional[int]:
        return self.message.topic if self.message else None


@dataclass
class Section:
    """Consecutive turns of one topic (topic None: the closing, or notes before any turn)."""

    topic: Optional[int]
    turns: list[Turn] = field(default_factory=list)

    @property
    def closed(self) -> Optional[TopicClosed]:
        found = [e for t in self.turns for e in t.events if isinstance(e, TopicClosed)]
        return found[-1] if found else None


def turns_of(events: Sequence[EventBase]) -> list[Turn]:
    """Group events into turns; run_started and run_finished belong to no turn."""
    turns: list[Turn] = []
    last = 0
    for event in events:
        if isinstance(event, (RunStarted, RunFinished)):
            continue
        if isinstance(event, Message):
            turns.append(Turn(event.turn, [event]))
            last = event.turn
        elif isinstance(event, COMPANIONS) and turns and turns[-1].message:
            turns[-1].events.append(event)
        else:
            turns.append(Turn(last + 1, [event]))
    return turns


def sections_of(turns: Sequence[Turn]) -> list[Section]:
    """Split turns where the topic changes; notes stay in the section they occurred in."""
    sections: list[Section] = []
    for turn in turns:
        if not sections or (turn.message and turn.topic != sections[-1].topic):
            sections.append(Section(turn.topic))
        sections[-1].turns.append(turn)
    return sections


def section_title(section: Section, topics: Sequence[str]) -> str:
    if section.topic is None:
        return "Closing" if any(t.message for t in section.turns) else "Run"
    name = topics[section.topic] if section.topic < len(topics) else "?"
    return f"Topic {section.topic + 1}/{len(topics)}: {name}"


def closed_text(closed: TopicClosed) -> str:
    return f"closed by {closed.closed_by} after {closed.rounds} round(s)"


def initials(name: str) -> str:
    """Avatar text: `Participant_1` -> `P1`, `Moderator` -> `Mo`, `DrSmith` -> `DS`."""
    parts = [p for p in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z0-9])", name) if p]
    if len(parts) >= 2:
        return (parts[0][0] + parts[1][0]).upper()
    return name[:2].capitalize() or "?"


def speaker_index(transcript: Transcript) -> dict[str, int]:
    """A stable colour index per speaker: scenario order first, then anyone else who spoke."""
    order = [name for _, name in transcript.speakers]
    order += [m.speaker for m in transcript.of_type(Message) if m.speaker not in order]
    return {name: i for i, name in enumerate(dict.fromkeys(order))}


def shown(value: object) -> str:
    return "—" if value is None else str(value)


def agent_table(transcript: Transcript) -> tuple[list[str], list[list[str]]]:
    """Header and rows (agent, role, model, then each generation setting), as recorded at the start."""
    s = transcript.started
    settings = {name: s.settings.get(name, {}) for _, name in transcript.speakers}
    keys = list(dict.fromkeys(k for values in settings.values() for k in values))
    rows = [[name, role, s.models.get(name, "?")] + [shown(settings[name].get(k)) for k in keys]
            for role, name in transcript.speakers]
    return ["Agent", "Role", "Model"] + keys, rows


def usage_table(transcript: Transcript) -> tuple[list[str], list[list[str]]]:
    """Messages, calls, tokens and model time per role, plus a total row."""
    totals = totals_of(transcript.events)
    columns = ("messages", "calls", "prompt_tokens", "completion_tokens")
    rows = [[role] + [str(r[c]) for c in columns] + [f"{r['latency_s']:.1f}"]
            for role, r in sorted(totals["by_role"].items())]
    rows.append(["total"] + [str(totals[c]) for c in columns] + [f"{totals['latency_s']:.1f}"])
    return ["Role", "Messages", "Calls", "Prompt tokens", "Completion tokens", "Model time (s)"], rows


def _pairs(mapping: object) -> str:
    if not isinstance(mapping, dict):
        return str(mapping)
    return ", ".join(f"{k}={shown(v)}" for k, v in mapping.items())


def run_facts(transcript: Transcript) -> list[tuple[str, str]]:
    """The run header as (label, text) pairs: where it came from, how it was set up, how it ended."""
    s, done = transcript.started, transcript.finished
    status = f"{done.status} — {done.stop_reason} (wall {done.wall_s:.1f}s)" if done else "did not finish"
    facts = [("Scenario", s.scenario_path), ("Scenario sha256", s.scenario_sha256),
             ("Run", f"{s.run_id} · protocol {s.protocol} · started {s.ts}"), ("Status", status)]
    facts += [(key, _pairs(s.scenario[key])) for key in ("limits", "routing", "retry") if key in s.scenario]
    facts += [("backends", _pairs(s.settings.get("backends", {}))), ("seed", str(s.seed)),
              ("versions", _pairs(s.versions))]
    resumed = len(transcript.of_type(RunResumed))
    if resumed:
        facts.append(("Resumed", f"{resumed} time(s)"))
    if transcript.migrated_from is not None:
        facts.append(("Transcript", f"schema version {transcript.migrated_from}, upgraded on load"))
    return facts
