"""How the conference's events read as text: the lines a terminal, a summary, `moot score` and
the documents' figures share (moot.protocols.conference.views)."""

from __future__ import annotations

from typing import Optional, Sequence

from moot.kit import EventBase, MEASURED, measured_suffix, spread_text
from moot.protocols.conference.events import Coverage, Score, TopicClosed, Verdict
from moot.protocols.conference.verdicts import score_text


def where_text(topic: Optional[int], round_: int) -> str:
    """Where a conference turn is, as its line shows it: `T1 R2`, or `closing`."""
    return f"T{topic + 1} R{round_}" if topic is not None else "closing"


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


def shown_score(score: Score, value: Optional[float]) -> str:
    """One of a Score's values as people read it (an expectation always with a decimal)."""
    return "—" if value is None else score_text(value, score.method in MEASURED)


def score_line(score: Score) -> str:
    """`Evaluator scores: overall=7 | clarity=7 ...`; measured ones say so: `expected scores
    (measured: likelihood)`."""
    how = measured_suffix(score.method)
    if score.kind == "judge_decision":
        grade = shown_score(score, score.overall) if score.parsed else f"UNPARSED ({(score.error or '')[:60]})"
        return f"{score.speaker} grade of the judge decision at turn {score.turn}: {grade}{how}"
    what = "expected scores" if how else "scores"
    if not score.parsed:
        return f"{score.speaker} {what}: UNPARSED ({(score.error or '')[:60]})"
    detail = " ".join(f"{k}={shown_score(score, v)}" for k, v in score.scores.items())
    suspect = f" (suspect: {score.suspect} scores)" if score.suspect else ""
    return f"{score.speaker} {what}{how}: overall={shown_score(score, score.overall)} | {detail}{suspect}"


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


def topic_lines(events: Sequence[EventBase], topics: Sequence[str]) -> list[str]:
    """A conference's summary: each topic, how it closed, its verdicts, scores and coverage."""
    lines = []
    closed = {e.topic: e for e in events if isinstance(e, TopicClosed)}
    for index, topic in enumerate(topics):
        status = closed_text(closed[index]) if index in closed else "not closed"
        lines.append(f"Topic {index + 1}: {topic} — {status}")
        for v in (e for e in events if isinstance(e, Verdict) and e.topic == index):
            extra = f" (raw: {v.raw[:60]!r})" if v.verdict == "UNPARSED" and v.raw is not None else ""
            lines.append(f"  round {v.round}: {v.speaker} → {v.verdict}{extra}")
        for s in (e for e in events if isinstance(e, Score) and e.topic == index):
            lines.append("  " + score_line(s))
        for c in (e for e in events if isinstance(e, Coverage) and e.topic == index):
            lines.append(f"  {c.speaker}: {c.covered}/{c.total} reference items covered ({c.fraction:.0%})")
    return lines
