"""A conference's per-unit measures: over its topics, how many closed in agreement and after how
many rounds (from its results row), the evaluator's overall scores, the reference coverage and,
once a grader graded the judge's decisions (`moot score --role grader=SPEC`, Heller et al.
Table 5), their grades (from its transcript; in a rescored folder the last one recorded per topic,
or per decision, counts)."""

from __future__ import annotations

import statistics
from typing import Optional, Sequence

from moot.contract.metrics import Measure, Metrics, Point, Series, UnitRecord
from moot.protocols.conference.events import Coverage, Score, Verdict

AGREED = ("agreement", "moderator")  # the judge's AGREEMENT, or the deciding moderator's NEXT_TOPIC


def _topics(unit: UnitRecord) -> list[dict[str, object]]:
    found = unit.row.extra("topics")
    return [t for t in found if isinstance(t, dict)] if isinstance(found, list) else []


def _mean(values: Sequence[float]) -> Optional[float]:
    return statistics.fmean(values) if values else None


def agreed(unit: UnitRecord) -> Optional[float]:
    """The share of the conference's closed topics that closed in agreement."""
    topics = _topics(unit)
    return _mean([1.0 if t.get("closed_by") in AGREED else 0.0 for t in topics])


def rounds_to_agreement(unit: UnitRecord) -> Optional[float]:
    """The mean number of rounds the topics that closed in agreement took."""
    rounds = [t.get("rounds") for t in _topics(unit) if t.get("closed_by") in AGREED]
    return _mean([float(r) for r in rounds if isinstance(r, (int, float))])


def evaluator_overall(unit: UnitRecord) -> Optional[float]:
    """The mean over topics of the evaluator's (last) overall score of the debate."""
    if unit.transcript is None:
        return None
    last = {s.topic: s for s in unit.transcript().of_type(Score) if s.kind == "debate"}
    return _mean([s.overall for s in last.values() if s.parsed and s.overall is not None])


def coverage(unit: UnitRecord) -> Optional[float]:
    """The mean over assessed topics of the (last) covered fraction of the reference outcome."""
    if unit.transcript is None:
        return None
    last = {c.topic: c for c in unit.transcript().of_type(Coverage)}
    return _mean([c.fraction for c in last.values()])


def _grades(unit: UnitRecord) -> list[Score]:
    """The grader's (last) grade of each judge decision, in the order the judge decided."""
    if unit.transcript is None:
        return []
    last = {s.turn: s for s in unit.transcript().of_type(Score) if s.kind == "judge_decision"}
    return [last[turn] for turn in sorted(last)]


def judge_grade(unit: UnitRecord) -> Optional[float]:
    """The mean grade (1-10) of the judge's decisions a grader graded (an unparsed grade: not counted)."""
    return _mean([s.overall for s in _grades(unit) if s.parsed and s.overall is not None])


def judge_grades(unit: UnitRecord) -> list[Point]:
    """Per judge decision, numbered 1, 2, ... in the order the judge made them: its grade (Table 5's
    "Debate 1" ... columns; an unparsed grade: no point, the numbering kept)."""
    return [Point("judge decision", number, s.overall) for number, s in enumerate(_grades(unit), 1)
            if s.parsed and s.overall is not None]


def judge_agreement(unit: UnitRecord) -> list[Point]:
    """Per topic and round: 1 when the judge said AGREEMENT, 0 when MORE_DEBATE (unparsed: no point)."""
    if unit.transcript is None:
        return []
    return [Point(f"topic {v.topic}", v.round, 1.0 if v.verdict == "AGREEMENT" else 0.0)
            for v in unit.transcript().of_type(Verdict) if v.verdict in ("AGREEMENT", "MORE_DEBATE")]


def rounds_by_topic(unit: UnitRecord) -> list[Point]:
    """Per topic in order: the rounds it took, when it closed in agreement."""
    return [Point("rounds to agreement", topic, float(rounds)) for t in _topics(unit)
            if t.get("closed_by") in AGREED and isinstance(topic := t.get("topic"), int)
            and isinstance(rounds := t.get("rounds"), int)]


def evaluator_by_topic(unit: UnitRecord) -> list[Point]:
    """Per topic in order: the evaluator's (last) overall score of its debate."""
    if unit.transcript is None:
        return []
    last = {s.topic: s for s in unit.transcript().of_type(Score) if s.kind == "debate" and s.topic is not None}
    return [Point("evaluator overall", t, s.overall) for t, s in sorted(last.items())
            if s.parsed and s.overall is not None]


def covered_by_topic(unit: UnitRecord) -> list[Point]:
    """Per topic in order: how many items of its reference outcome the debate covered (the last
    assessment counts; Heller et al. §5.2.2 counts the clusters covered on topic 1)."""
    if unit.transcript is None:
        return []
    last = {c.topic: c for c in unit.transcript().of_type(Coverage)}
    return [Point("reference items covered", t, float(c.covered)) for t, c in sorted(last.items())]


def coverage_by_topic(unit: UnitRecord) -> list[Point]:
    """Per topic in order: the (last) covered fraction of its reference outcome."""
    if unit.transcript is None:
        return []
    last = {c.topic: c for c in unit.transcript().of_type(Coverage)}
    return [Point("reference coverage", t, c.fraction) for t, c in sorted(last.items())]


METRICS = Metrics(
    measures=(
        Measure("agreed", "share of the topics closed in agreement", agreed),
        Measure("rounds_to_agreement", "mean rounds of the topics closed in agreement", rounds_to_agreement),
        Measure("evaluator_overall", "mean evaluator overall score over topics", evaluator_overall,
                reads_transcript=True),
        Measure("coverage", "mean covered fraction of the reference outcome over assessed topics", coverage,
                reads_transcript=True),
        Measure("judge_grade", "mean grade (1-10) a grader gave the judge's decisions", judge_grade,
                reads_transcript=True),
    ),
    headline="rounds_to_agreement",
    series=(
        Series("judge_agreement", "the judge's AGREEMENT (1) or MORE_DEBATE (0) per topic and round", "round",
               judge_agreement),
        Series("rounds_by_topic", "rounds each topic took to close in agreement", "topic", rounds_by_topic),
        Series("evaluator_by_topic", "the evaluator's overall score of each topic's debate", "topic", evaluator_by_topic),
        Series("coverage_by_topic", "the covered fraction of each topic's reference outcome", "topic", coverage_by_topic),
        Series("covered_by_topic", "how many items of each topic's reference outcome its debate covered", "topic",
               covered_by_topic),
        Series("judge_grades", "the grade (1-10) a grader gave each judge decision, in order", "decision",
               judge_grades),
    ),
)
