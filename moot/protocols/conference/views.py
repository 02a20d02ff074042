"""How a conference reads (its `view`, moot.views.unit): a section per topic, then the closing;
a turn tagged `T1 R2` with what it did; the judge's verdict, the evaluator's scores, the
assessor's coverage and how a topic closed under the turn that gave them; its topics in the
summary. Its speakers, their labels and its topics come from the scenario as recorded."""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

from moot.kit import (
    Badge, Bar, Chart, Checklist, Companion, EventBase, Figure, Grade, Json, Message, Place, Remark, ResultRow,
    Transcript, TurnText, UnitView, Unreadable, json_object, summary_lines,
)
from moot.protocols.conference.events import Coverage, Score, TopicClosed, Verdict
from moot.protocols.conference.texts import (
    closed_text, coverage_rows, coverage_text, grade_spread, measured_text, score_caption, score_line, shown_score,
    topic_lines, verdict_detail, where_text,
)

ROLES = ("judge", "evaluator", "assessor")  # the roles after the moderator and participants
ASSESSED = "(an answer and a quote per reference item; checked below)"


def topics_of(scenario: Mapping[str, Json]) -> list[str]:
    """The topics of a recorded scenario."""
    topics = scenario.get("topics")
    return [str(t) for t in topics] if isinstance(topics, list) else []


def agents_of(scenario: Mapping[str, Json]) -> list[tuple[str, dict[str, Json]]]:
    """(role, agent) of a recorded scenario in speaking order: the moderator, the participants,
    the judge, the evaluator and the assessor that have a name."""
    participants = scenario.get("participants")
    agents = [("moderator", scenario.get("moderator"))]
    agents += [("participant", p) for p in (participants if isinstance(participants, list) else [])]
    agents += [(role, scenario.get(role)) for role in ROLES]
    return [(role, a) for role, a in agents if isinstance(a, dict) and "name" in a]


class ConferenceView(UnitView):
    """See the module docstring."""

    contents = True

    def __init__(self, scenario: Mapping[str, Json], result_name: str = "prediction"):
        super().__init__(scenario, result_name)
        self.topics = topics_of(scenario)

    def section(self, action: str, part: Optional[int]) -> Place:
        if part is None:
            return Place("closing", "Closing")
        title = self.topics[part] if part < len(self.topics) else "?"
        return Place(f"topic:{part}", f"Topic {part + 1}/{len(self.topics)}: {title}", rounds=True)

    def turn(self, message: Message) -> TurnText:
        return TurnText(where_text(message.part, message.round), message.action, said(message),
                        action=message.action, decision=False)

    def companion(self, event: EventBase) -> Optional[Companion]:
        if isinstance(event, Verdict):
            detail = verdict_detail(event)
            tags = (measured_text(event),) if measured_text(event) else ()
            raw = (event.raw or "") if event.verdict == "UNPARSED" else None
            return Companion(event.turn, f"verdict: {event.verdict} — {detail}".rstrip(" —"),
                             Badge("Verdict", event.verdict, detail, "verdict", tags, raw))
        if isinstance(event, Score):
            return Companion(event.turn, score_line(event), score_figure(event))
        if isinstance(event, TopicClosed):
            text = f"topic {event.topic + 1} {closed_text(event)}"
            return Companion(None, text, Remark(text), strong=False, section_note=closed_text(event))
        if isinstance(event, Coverage):
            rows = tuple(tuple(row) for row in coverage_rows(event))
            return Companion(event.turn, coverage_text(event), Checklist(
                coverage_text(event), ("reference item", "status", "evidence"), rows, "coverage", event.raw))
        return None

    def speakers(self, roles: Sequence[str]) -> list[tuple[str, str]]:
        return [(role, str(a["name"])) for role, a in agents_of(self.scenario)] or super().speakers(roles)

    def labels(self) -> dict[str, str]:
        return {str(a["name"]): str(a["label"]) for _, a in agents_of(self.scenario) if a.get("label")}

    def personas(self) -> dict[str, str]:
        return {str(a["name"]): str(a["persona"]) for _, a in agents_of(self.scenario)
                if isinstance(a.get("persona"), str) and str(a["persona"]).strip()}

    def parts(self) -> list[str]:
        return list(self.topics)

    def summary(self, events: Sequence[EventBase]) -> list[str]:
        return topic_lines(events, self.parts())

    def ending(self, transcript: Transcript) -> list[str]:
        return summary_lines(transcript.events, self)

    def row(self, row: ResultRow) -> str:
        """`seed-1: completed (T1: agreement after 2, T2: round_cap after 3)`."""
        closed = row.extra("topics")
        topics = ", ".join(f"T{int(str(t['topic'])) + 1}: {t['closed_by']} after {t['rounds']}"
                           for t in closed if isinstance(t, dict)) if isinstance(closed, list) else ""
        return f"{row.id}: {row.status} ({topics})"


def said(message: Message) -> str:
    """A turn's text as the views show it: an evaluator's scores are its chart's (its score line on
    a terminal), so its rationale stands for the turn; the assessor's answer per reference item is
    its coverage table's (the documents fold the reply as written; the transcript keeps it)."""
    if message.action == "evaluate":
        data = json_object(message.content) or {}
        return str(data.get("rationale", message.content)).strip()
    if message.action == "assess":
        return ASSESSED
    if message.source == "human" and message.action in ("judge", "decide"):
        return answered_in_words(message.content)
    return message.content.strip()


def answered_in_words(content: str) -> str:
    """A person's verdict or decision as they gave it, not the JSON moot wrote for it:
    `MORE DEBATE — the costs were not discussed`, `NEXT TOPIC — Let us move on.`"""
    data = json_object(content)
    if data is None:
        return content.strip()  # the plain-text form, or a skipped turn
    label = str(data.get("verdict") or data.get("decision") or "").replace("_", " ")
    why = str(data.get("reason") or data.get("message") or "").strip()
    return f"{label} — {why}" if why else label


def score_figure(score: Score) -> Figure:
    """The evaluator's scores as a chart; a grade of a judge decision as one line."""
    caption = score_caption(score)
    if not score.parsed:
        return Unreadable(caption, score.speaker, score.error or "", "score", score.raw or "")
    overall = shown_score(score, score.overall)
    if score.kind == "judge_decision":
        return Grade("Grade of this judge decision", score.speaker, overall, spread=grade_spread(score),
                     how=caption.lower(), rationale=score.rationale)
    bars = tuple(Bar(name, float(value), shown_score(score, value), score.distributions.get(name, {}))
                 for name, value in score.scores.items())
    return Chart(caption, score.speaker, overall, bars, method=score.method, rationale=score.rationale)
