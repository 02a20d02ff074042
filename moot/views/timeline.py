"""A transcript regrouped for reading: turns with their verdicts and scores, in sections.

A conference's sections are its topics (then the closing); an item's are its stages (COLA's
analysis, debate, conclusion; S2MAD's stance separation, initial opinions, debate, judge; a
negotiation per generator->discriminator pair), each in the order it first occurred, so stages
that ran concurrently are not interleaved. The item's outcomes (the recorded one, and any a
rescoring added) close it. Replay, the Markdown export and the HTML export all present a run in
this shape, and take their shared wording (titles, verdicts, outcomes) from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

from moot.log.events import (
    MEASURED, Call, Coverage, EventBase, Message, Outcome, RunFinished, RunResumed, RunStarted, Score, TopicClosed,
    Verdict,
)
from moot.views.summary import measured_suffix, totals_of
from moot.log.transcript import Transcript

COMPANIONS = (Verdict, Score, TopicClosed, Coverage)
CUT = "cut at its last full sentence"  # a turn the model stopped mid-sentence
OUTCOME_KEY = ("outcome",)
Key = tuple


@dataclass
class Turn:
    """One turn: a message and the events recorded with it, or a note between turns (an error,
    a resume, an outcome) that has no message."""

    number: int
    events: list[EventBase] = field(default_factory=list)

    @property
    def message(self) -> Optional[Message]:
        first = self.events[0]
        return first if isinstance(first, Message) else None


@dataclass
class Section:
    """The turns of one topic or stage (see the module docstring)."""

    key: Key
    turns: list[Turn] = field(default_factory=list)

    @property
    def closed(self) -> Optional[TopicClosed]:
        found = [e for t in self.turns for e in t.events if isinstance(e, TopicClosed)]
        return found[-1] if found else None

    @property
    def rounds_shown(self) -> bool:
        """Round headers: always in a conference topic, in a stage only when it had several rounds."""
        if self.key[0] == "topic":
            return True
        return len({t.message.round for t in self.turns if t.message}) > 1


def place_of(message: Message, conference: bool) -> Key:
    """The section a message belongs to."""
    return topic_place(message.topic) if conference else ("stage", message.action)


def topic_place(topic: Optional[int]) -> Key:
    """A conference section: a topic, or the closing."""
    return ("topic", topic) if topic is not None else ("closing",)


def where_text(topic: Optional[int], round_: int) -> str:
    """Where a conference turn is, as its line shows it: `T1 R2`, or `closing`."""
    return f"T{topic + 1} R{round_}" if topic is not None else "closing"


def turns_of(events: Sequence[EventBase]) -> list[Turn]:
    """Group events into turns. Calls, run_started and run_finished belong to no turn; a verdict
    or score joins the message of its `turn` (a rescoring appends them later), else the last one."""
    turns: list[Turn] = []
    by_number: dict[int, Turn] = {}
    last = 0
    for event in events:
        if isinstance(event, (RunStarted, RunFinished, Call)):
            continue
        if isinstance(event, Message):
            by_number[event.turn] = Turn(event.turn, [event])
            turns.append(by_number[event.turn])
            last = event.turn
            continue
        owner = None
        if isinstance(event, COMPANIONS) and turns:
            owner = by_number.get(getattr(event, "turn", -1)) or (turns[-1] if turns[-1].message else None)
        if owner is not None:
            owner.events.append(event)
        else:
            turns.append(Turn(last + 1, [event]))
    return turns


def sections_of(turns: Sequence[Turn], conference: bool) -> list[Section]:
    """Sections in order of first occurrence; notes stay where they occurred, outcomes go last."""
    sections: dict[Key, Section] = {}
    current: Key = ("run",)
    for turn in turns:
        if turn.message:
            current = place_of(turn.message, conference)
            key = current
        else:
            key = OUTCOME_KEY if isinstance(turn.events[0], Outcome) else current
        sections.setdefault(key, Section(key)).turns.append(turn)
    ordered = [s for k, s in sections.items() if k != OUTCOME_KEY]
    return ordered + ([sections[OUTCOME_KEY]] if OUTCOME_KEY in sections else [])


def is_conference(transcript: Transcript) -> bool:
    return bool(transcript.topics)


def grouped(transcript: Transcript) -> list[Section]:
    return sections_of(turns_of(transcript.events), is_conference(transcript))


def section_title(key: Key, topics: Sequence[str]) -> str:
    kind = key[0]
    if kind == "topic":
        n = key[1]
        return f"Topic {n + 1}/{len(topics)}: {topics[n] if n < len(topics) else '?'}"
    if kind == "stage":
        return stage_title(key[1])
    return {"closing": "Closing", "outcome": "Outcome"}.get(kind, "Run")


def stage_title(stage: str) -> str:
    text = stage.replace("_", " ").strip() or "stage"
    return text[0].upper() + text[1:]


def closed_text(closed: TopicClosed) -> str:
    return f"closed by {closed.closed_by} after {closed.rounds} round(s)"


def verdict_detail(verdict: Verdict) -> str:
    return verdict.reason if verdict.verdict != "UNPARSED" else f"could not parse: {verdict.error or ''}"


def measured_text(verdict: Verdict) -> str:
    """`p(agree)=0.83, measured` for a verdict read from probabilities; '' for a written one."""
    if verdict.method not in MEASURED or not verdict.probabilities:
        return ""
    option, p = next(iter(verdict.probabilities.items()))
    return f"p({option})={p:.2f}, measured"


def score_caption(score: Score) -> str:
    """`Scores` (written) or `Expected scores (measured: likelihood)`."""
    how = measured_suffix(score.method)
    return f"Expected scores{how}" if how else "Scores"


def spread_text(distribution: dict[str, float], top: int = 3) -> str:
    """The most likely scores of a measured distribution: `10: 35%, 1: 29%, 7: 6%`."""
    ranked = sorted(distribution.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{k}: {p:.0%}" for k, p in ranked)


def grade_spread(score: Score) -> str:
    """The most likely grades of a measured grade of a judge decision (`7: 50%, 8: 30%, 6: 10%`);
    '' for a written one."""
    spread = score.distributions.get("correctness_format")
    return spread_text(spread) if spread else ""


def coverage_text(coverage: Coverage) -> str:
    """`reference coverage of topic 1: 6/7 items (86%); not covered: public`."""
    head = (f"reference coverage of topic {coverage.topic + 1}: {coverage.covered}/{coverage.total} items "
            f"({coverage.fraction:.0%})" + measured_suffix(coverage.method))
    groups = [(label, [i.name for i in coverage.items if i.status == status])
              for status, label in (("not_covered", "not covered"), ("unverified", "unverified"),
                                    ("unparsed", "unparsed"))]
    return "; ".join([head] + [f"{label}: {', '.join(names)}" for label, names in groups if names])


def coverage_rows(coverage: Coverage) -> list[list[str]]:
    """One row per reference item: item, status, and the quote (with its turn) or the problem."""
    rows = []
    for item in coverage.items:
        found = f" (turn {item.turn})" if item.turn is not None else ""
        detail = f"\u201c{item.evidence}\u201d{found}" if item.evidence else ""
        if item.error:
            detail = f"{detail} — {item.error}" if detail else item.error
        if item.probability is not None:
            detail = f"p(yes)={item.probability:.2f}" + (f"; {detail}" if detail else "")
        rows.append([item.name, item.status.replace("_", " "), detail])
    return rows


def outcome_text(outcome: Outcome, result_name: str = "prediction") -> str:
    """`stance: favor (gold favor, right) — decided by judger`."""
    gold = ""
    if outcome.gold is not None:
        gold = f" (gold {outcome.gold}, {'right' if outcome.prediction == outcome.gold else 'wrong'})"
    by = f" — decided by {outcome.decided_by}" if outcome.decided_by else ""
    return f"{result_name}: {outcome.prediction}{gold}{by}"


def message_meta(m: Message, conference: bool) -> str:
    """The line under a speaker's name: role, stage/action, round, decision, time, tokens."""
    parts = [m.role] if m.role != m.speaker else []
    parts.append(m.action if conference else f"round {m.round}")
    if m.decision:
        parts.append(f"decision {m.decision}")
    if m.cut:
        parts.append(CUT)
    parts += [f"turn {m.turn}", f"{m.latency_s:.1f}s", f"{m.usage.prompt_tokens}+{m.usage.completion_tokens} tok"]
    return " · ".join(parts + ([m.model] if m.model else []))


def initials(name: str) -> str:
    """Avatar text: `Participant_1` -> `P1`, `Moderator` -> `Mo`, `DrSmith` -> `DS`."""
    parts = [p for p in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z0-9])", name) if p]
    if len(parts) >= 2:
        return (parts[0][0] + parts[1][0]).upper()
    return name[:2].capitalize() or "?"


def speakers_of(transcript: Transcript) -> list[tuple[str, str]]:
    """(role, name) of everyone who takes a model: a conference's agents in speaking order, an
    item's roles as recorded."""
    return transcript.speakers or [(role, role) for role in transcript.started.models]


def speaker_index(transcript: Transcript) -> dict[str, int]:
    """A stable colour index per speaker: recorded order first, then anyone else who spoke."""
    order = [name for _, name in speakers_of(transcript)]
    order += [m.speaker for m in transcript.messages if m.speaker not in order]
    return {name: i for i, name in enumerate(dict.fromkeys(order))}


def shown(value: object) -> str:
    return "—" if value is None else str(value)


def agent_table(transcript: Transcript) -> tuple[list[str], list[list[str]]]:
    """Header and rows (agent, [role,] model, then each generation setting), as recorded at the start."""
    s = transcript.started
    speakers = speakers_of(transcript)
    settings = {name: s.settings.get(name, {}) for _, name in speakers}
    keys = list(dict.fromkeys(k for values in settings.values() for k in values))
    with_role = any(role != name for role, name in speakers)
    rows = [[name] + ([role] if with_role else []) + [s.models.get(name, "?")]
            + [shown(settings[name].get(k)) for k in keys] for role, name in speakers]
    return ["Agent"] + (["Role"] if with_role else []) + ["Model"] + keys, rows


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


def run_facts(transcript: Transcript) -> list[tuple[str, str]]:
    """The run header as (label, text) pairs: where it came from, how it was set up, how it ended."""
    s, done = transcript.started, transcript.finished
    status = f"{done.status} — {done.stop_reason} (wall {done.wall_s:.1f}s)" if done else "did not finish"
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


def input_texts(transcript: Transcript) -> list[tuple[str, str]]:
    """An item's input (text, target, claim, each comment) and gold label, as (label, text)."""
    s = transcript.started
    found: list[tuple[str, str]] = []
    for name, value in s.inputs.items():
        values = value if isinstance(value, list) else [value]
        for n, v in enumerate(values, 1):
            text = v.get("text", "") if isinstance(v, dict) else str(v)
            found.append((f"{name} {n}" if isinstance(value, list) else name, text))
    if s.gold is not None:
        found.append(("gold", s.gold))
    return found
