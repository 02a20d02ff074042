"""Totals and the end-of-run summary, computed from transcript events only."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional, Sequence

from moot.log.events import MEASURED, Coverage, EventBase, Message, RunFinished, RunStarted, Score, TopicClosed, Verdict
from moot.protocols.conference.verdicts import score_text


def totals_of(events: Sequence[EventBase]) -> dict[str, Any]:
    """Messages, backend calls and tokens, overall and per role."""
    by_role: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for e in events:
        if isinstance(e, Message):
            row = by_role[e.role]
            row["messages"] += 1
            row["calls"] += e.calls
            row["prompt_tokens"] += e.usage.prompt_tokens
            row["completion_tokens"] += e.usage.completion_tokens
            row["latency_s"] += e.latency_s
    total = {k: sum(r[k] for r in by_role.values())
             for k in ("messages", "calls", "prompt_tokens", "completion_tokens", "latency_s")}
    rounded = {role: {k: round(v, 3) if k == "latency_s" else int(v) for k, v in row.items()}
               for role, row in by_role.items()}
    return {**{k: round(v, 3) if k == "latency_s" else int(v) for k, v in total.items()}, "by_role": rounded}


def summary_lines(events: Sequence[EventBase], topics: Sequence[str]) -> list[str]:
    """Human-readable summary: topics, rounds, verdicts, scores, usage, time, stop reason."""
    started = next(e for e in events if isinstance(e, RunStarted))
    finished = [e for e in events if isinstance(e, RunFinished)]
    lines = [f"== Summary: {started.scenario.get('title', '')}"]
    closed = {e.topic: e for e in events if isinstance(e, TopicClosed)}
    for index, topic in enumerate(topics):
        status = (f"closed by {closed[index].closed_by} after {closed[index].rounds} round(s)"
                  if index in closed else "not closed")
        lines.append(f"Topic {index + 1}: {topic} — {status}")
        for v in (e for e in events if isinstance(e, Verdict) and e.topic == index):
            extra = f" (raw: {v.raw[:60]!r})" if v.verdict == "UNPARSED" else ""
            lines.append(f"  round {v.round}: {v.speaker} → {v.verdict}{extra}")
        for s in (e for e in events if isinstance(e, Score) and e.topic == index):
            lines.append("  " + score_line(s))
        for c in (e for e in events if isinstance(e, Coverage) and e.topic == index):
            lines.append(f"  {c.speaker}: {c.covered}/{c.total} reference items covered ({c.fraction:.0%})")
    totals = totals_of(events)
    lines.append("Usage per role (messages, calls, prompt+completion tokens, model time):")
    for role, row in sorted(totals["by_role"].items()):
        lines.append(f"  {role:<12} {row['messages']:>4} msg {row['calls']:>4} calls "
                     f"{row['prompt_tokens']:>7}+{row['completion_tokens']:<6} tok {row['latency_s']:>8.1f}s")
    generated, model_time = totals["completion_tokens"], totals["latency_s"]
    rate = f", {generated / model_time:.1f} generated tok/s" if model_time else ""
    if finished:
        end = finished[-1]
        lines.append(f"Wall time: {end.wall_s:.1f}s (this invocation){rate}")
        lines.append(f"Stop: {end.status} — {end.stop_reason}")
    return lines


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
    return f"{score.speaker} {what}{how}: overall={shown_score(score, score.overall)} | {detail}"


def measured_suffix(method: Optional[str]) -> str:
    """` (measured: likelihood)` for what was read from the model's probabilities; '' otherwise."""
    return f" (measured: {method})" if method in MEASURED else ""


def shown_score(score: Score, value: Optional[float]) -> str:
    """One of a Score's values as people read it (an expectation always with a decimal)."""
    return "—" if value is None else score_text(value, score.method in MEASURED)
