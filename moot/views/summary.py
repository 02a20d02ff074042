"""Totals and the end-of-run summary, computed from transcript events only."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional, Sequence

from moot.log.events import MEASURED, EventBase, Message, RunFinished, RunStarted
from moot.views.unit import UnitView


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


def summary_lines(events: Sequence[EventBase], view: UnitView) -> list[str]:
    """Human-readable summary: the title, the protocol's lines (a conference's topics, rounds,
    verdicts, scores), usage, time, stop reason."""
    started = next(e for e in events if isinstance(e, RunStarted))
    finished = [e for e in events if isinstance(e, RunFinished)]
    lines = [f"== Summary: {started.scenario.get('title', '')}", *view.summary(events)]
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
        lines.append(f"Stop: {ending_text(end)}")
    return lines


def ending_text(done: Optional[RunFinished], running: bool = False) -> str:
    """How a unit ended: `completed`, `failed — error: ...`, `running` (no end yet while its run
    holds its folder), `did not finish`. A reason that only repeats the status is not said twice."""
    if done is None:
        return "running" if running else "did not finish"
    reason = stop_reason(done)
    return f"{done.status} — {reason}" if reason else done.status


def stop_reason(done: RunFinished) -> str:
    """Why the unit stopped, or "" where its reason is only its status (`completed — completed`)."""
    reason = done.stop_reason.strip()
    return "" if reason == done.status else reason


def measured_suffix(method: Optional[str]) -> str:
    """` (measured: likelihood)` for what was read from the model's probabilities; '' otherwise."""
    return f" (measured: {method})" if method in MEASURED else ""
