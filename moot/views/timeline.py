"""A transcript regrouped for reading: turns with their companion events, in sections.

The unit's protocol says which section a turn belongs to and which events go with a turn (its
view, moot.views.unit): a conference's topics, an item's stages (COLA's analysis, debate,
conclusion; a negotiation per generator->discriminator pair, ...), each in the order it first
occurred, so stages that ran concurrently are not interleaved. The item's outcomes (the recorded
one, and any a rescoring added) close it. Replay, the Markdown export and the HTML export all
present a run in this shape, and take their shared wording from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

from moot.log.events import Call, EventBase, Human, Message, Outcome, RunFinished, RunResumed, RunStarted
from moot.log.transcript import Transcript
from moot.views.summary import ending_text, totals_of
from moot.views.unit import Place, UnitView

CUT = "cut at its last full sentence"  # a turn the model stopped mid-sentence
RUN, OUTCOME = Place("run", "Run"), Place("outcome", "Outcome")  # notes before any turn; outcomes


@dataclass
class Turn:
    """One turn: a message and the events recorded with it, or a note between turns (an error,
    a resume, an outcome) that has no message. `calls`: the model calls recorded since the
    previous message, up to this one (what the turn asked of its model)."""

    number: int
    events: list[EventBase] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)

    @property
    def message(self) -> Optional[Message]:
        first = self.events[0]
        return first if isinstance(first, Message) else None


@dataclass
class Section:
    """The turns of one section (see the module docstring)."""

    place: Place
    turns: list[Turn] = field(default_factory=list)

    def note(self, view: UnitView) -> str:
        """What its companions say of the whole section (the last that says anything)."""
        notes = [c.section_note for t in self.turns for e in t.events[1:] for c in [view.companion(e)] if c]
        return next((n for n in reversed(notes) if n), "")

    @property
    def rounds_shown(self) -> bool:
        """Round headers: where its protocol always shows them, else only when it had several rounds."""
        return self.place.rounds or len({t.message.round for t in self.turns if t.message}) > 1


def turns_of(events: Sequence[EventBase], view: UnitView) -> list[Turn]:
    """Group events into turns. A message takes the calls recorded before it (since the previous
    message); run_started and run_finished belong to no turn; a companion
    (the view says which events are) joins the message of its turn (a rescoring appends them
    later), else the last one."""
    turns: list[Turn] = []
    by_number: dict[int, Turn] = {}
    last = 0
    calls: list[Call] = []
    for event in events:
        if isinstance(event, Call):
            calls.append(event)
            continue
        if isinstance(event, (RunStarted, RunFinished)) or (isinstance(event, Human) and not event.fallback):
            continue  # a person's answer shows as its message (marked human); a time-out as a note
        if isinstance(event, Message):
            by_number[event.turn] = Turn(event.turn, [event], calls)
            calls = []
            turns.append(by_number[event.turn])
            last = event.turn
            continue
        companion = view.companion(event) if turns else None
        owner = None
        if companion is not None:
            mine = by_number.get(companion.turn) if companion.turn is not None else None
            owner = mine or (turns[-1] if turns[-1].message else None)
        if owner is not None:
            owner.events.append(event)
        else:
            turns.append(Turn(last + 1, [event]))
    return turns


def sections_of(turns: Sequence[Turn], view: UnitView) -> list[Section]:
    """Sections in order of first occurrence; notes stay where they occurred, outcomes go last."""
    sections: dict[str, Section] = {}
    current = RUN
    for turn in turns:
        m = turn.message
        if m is not None:
            current = view.section(m.action, m.part)
            place = current
        else:
            place = OUTCOME if isinstance(turn.events[0], Outcome) else current
        sections.setdefault(place.key, Section(place)).turns.append(turn)
    ordered = [s for k, s in sections.items() if k != OUTCOME.key]
    return ordered + ([sections[OUTCOME.key]] if OUTCOME.key in sections else [])


def grouped(transcript: Transcript, view: UnitView) -> list[Section]:
    return sections_of(turns_of(transcript.events, view), view)


def spread_text(distribution: dict[str, float], top: int = 3) -> str:
    """The most likely scores of a measured distribution: `10: 35%, 1: 29%, 7: 6%`."""
    ranked = sorted(distribution.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{k}: {p:.0%}" for k, p in ranked)


def outcome_text(outcome: Outcome, result_name: str = "prediction") -> str:
    """`stance: favor (gold favor, right) — decided by judger`."""
    gold = ""
    if outcome.gold is not None:
        gold = f" (gold {outcome.gold}, {'right' if outcome.prediction == outcome.gold else 'wrong'})"
    by = f" — decided by {outcome.decided_by}" if outcome.decided_by else ""
    return f"{result_name}: {outcome.prediction}{gold}{by}"


def message_meta(m: Message, view: UnitView) -> str:
    """The line under a speaker's name: role, what the turn did (or its round), decision, time, tokens."""
    parts = [m.role] if m.role != m.speaker else []
    parts.append(view.turn(m).step)
    if m.source == "human":
        parts.append("human")
    if m.decision:
        parts.append(f"decision {m.decision}")
    if m.cut:
        parts.append(CUT)
    parts += [f"turn {m.turn}", f"{m.latency_s:.1f}s", f"{m.usage.prompt_tokens}+{m.usage.completion_tokens} tok"]
    return " · ".join(parts + ([m.model] if m.model else []))


def seat_text(event: Human) -> str:
    """What stood in when a seat's time ran out: `seat judge: no answer within 30s; its model answered`."""
    what = "its model answered" if event.fallback == "model" else "the turn was skipped"
    return f"seat {event.seat}: no answer within {event.limit_s:g}s; {what}"


def initials(name: str) -> str:
    """Avatar text: `Participant_1` -> `P1`, `Moderator` -> `Mo`, `DrSmith` -> `DS`."""
    parts = [p for p in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z0-9])", name) if p]
    if len(parts) >= 2:
        return (parts[0][0] + parts[1][0]).upper()
    return name[:2].capitalize() or "?"


def speakers_of(transcript: Transcript, view: UnitView) -> list[tuple[str, str]]:
    """(role, name) of everyone who takes a model, in the order its protocol gives them."""
    return view.speakers(list(transcript.started.models))


def speaker_index(transcript: Transcript, view: UnitView) -> dict[str, int]:
    """A stable colour index per speaker: recorded order first, then anyone else who spoke."""
    order = [name for _, name in speakers_of(transcript, view)]
    order += [m.speaker for m in transcript.messages if m.speaker not in order]
    return {name: i for i, name in enumerate(dict.fromkeys(order))}


def shown(value: object) -> str:
    return "—" if value is None else str(value)


def agent_table(transcript: Transcript, view: UnitView) -> tuple[list[str], list[list[str]]]:
    """Header and rows (agent, [the name its turns show,] [role,] model, [persona,] then each
    generation setting), as recorded at the start."""
    s = transcript.started
    speakers = speakers_of(transcript, view)
    key = {name: name if name in s.models else role for role, name in speakers}  # models by name, else by role
    labels, personas = view.labels(), view.personas()
    settings = {name: s.settings.get(key[name], {}) for _, name in speakers}
    keys = list(dict.fromkeys(k for values in settings.values() for k in values))
    with_role = any(role != name for role, name in speakers)
    with_label = any(name in labels for _, name in speakers)
    with_persona = any(personas.get(name) for _, name in speakers)
    rows = [[name] + ([labels.get(name, name)] if with_label else []) + ([role] if with_role else [])
            + [s.models.get(key[name], "?")] + ([personas.get(name, "")] if with_persona else [])
            + [shown(settings[name].get(k)) for k in keys] for role, name in speakers]
    head = ["Agent"] + (["Shown as"] if with_label else []) + (["Role"] if with_role else []) + ["Model"] \
        + (["Persona"] if with_persona else []) + keys
    return head, rows


def usage_table(transcript: Transcript) -> tuple[list[str], list[list[str]]]:
    """Messages, calls, tokens and model time per role, plus a total row."""
    totals = totals_of(transcript.events)
    columns = ("messages", "calls", "prompt_tokens", "completion_tokens")
    rows = [[role] + [str(r[c]) for c in columns] + [f"{r['latency_s']:.1f}"]
            for role, r in sorted(totals["by_role"].items())]
    rows.append(["total"] + [str(totals[c]) for c in columns] + [f"{totals['latency_s']:.1f}"])
    return ["Role", "Messages", "Calls", "Prompt tokens", "Completion tokens", "Model time (s)"], rows


def pairs_text(mapping: object) -> str:
    """`k=v, k=v` (a mapping as a run's facts show it)."""
    if not isinstance(mapping, dict):
        return str(mapping)
    return ", ".join(f"{k}={shown(v)}" for k, v in mapping.items())


def run_facts(transcript: Transcript, running: bool = False) -> list[tuple[str, str]]:
    """The run header as (label, text) pairs: where it came from, how it was set up, how it ended."""
    s, done = transcript.started, transcript.finished
    status = ending_text(done, running) + (f" (wall {done.wall_s:.1f}s)" if done else "")
    facts = [("Scenario", s.scenario_path), ("Scenario sha256", s.scenario_sha256),
             ("Run", f"{s.run_id} · protocol {s.protocol} · unit {s.unit or '—'} · started {s.ts}"),
             ("Status", status)]
    if s.variant:
        facts.append(("Variant", pairs_text(s.variant)))
    facts += [(key, pairs_text(s.scenario[key])) for key in ("limits", "routing", "retry") if key in s.scenario]
    facts += [("backends", pairs_text(s.settings.get("backends", {}))), ("seed", str(s.seed)),
              ("versions", pairs_text(s.versions))]
    resumed = len(transcript.of_type(RunResumed))
    if resumed:
        facts.append(("Resumed", f"{resumed} time(s)"))
    if transcript.migrated_from is not None:
        facts.append(("Transcript", f"schema version {transcript.migrated_from}, upgraded on load"))
    return facts


def input_texts(transcript: Transcript, view: UnitView) -> list[tuple[str, str]]:
    """An item's input (text, target, claim, each comment) and gold label, as (label, text), each
    field named as its protocol's view calls it."""
    s = transcript.started
    found: list[tuple[str, str]] = []
    for name, value in s.inputs.items():
        values = value if isinstance(value, list) else [value]
        label = view.input_label(name)
        for n, v in enumerate(values, 1):
            text = v.get("text", "") if isinstance(v, dict) else str(v)
            found.append((f"{label} {n}" if isinstance(value, list) else label, text))
    if s.gold is not None:
        found.append(("gold", s.gold))
    return found
