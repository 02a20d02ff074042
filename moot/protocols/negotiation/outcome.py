"""The paper's rules (Sun et al.): when a negotiation agrees, how a negotiation and its
role-flipped twin combine, the third LLM's six-way vote, and the summary an outcome records."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Optional, Sequence

from moot.contract.protocol import Outcome
from moot.kit import UNPARSED
from moot.speaker_selection.negotiation import AGREE

NO_CONSENSUS = "no consensus"


@dataclass(frozen=True)
class Result:
    """One negotiation: who generated / discriminated, consensus or not, the decision."""

    generator: str
    discriminator: str
    consensus: bool
    decision: Optional[str]


def agreed(generated: Optional[str], verdict: tuple[str, Optional[str], str]) -> bool:
    """A consensus (Sun et al.): the discriminator's attitude is "yes" and its structured
    decision is the generator's decision. A generator reply without a decisive label (None)
    cannot be agreed with, and a "yes" whose decision differs from the generator's contradicts
    itself: neither is a consensus, and the negotiation goes on (the generator gets the
    explanation) until max_turns. The agreed decision is the negotiation's result."""
    attitude, decision, _ = verdict
    return attitude == AGREE and generated is not None and decision == generated


def combine(a: Result, b: Result) -> tuple[Optional[str], bool]:
    """(decision, needs the third LLM) from a negotiation and its role-flipped twin."""
    if a.consensus and b.consensus:
        return (a.decision, False) if a.decision == b.decision else (None, True)
    if a.consensus or b.consensus:
        return (a.decision if a.consensus else b.decision), False
    return None, True


def vote(results: Sequence[Result]) -> Optional[str]:
    """Most frequent decision of the negotiations; a tie goes to the earliest of the tied."""
    decisions = [r.decision for r in results if r.decision is not None]
    if not decisions:
        return None
    counts = Counter(decisions)
    best = max(counts.values())
    return next(d for d in decisions if counts[d] == best)


def outcome_of(decision: Optional[str], how: str, results: Sequence[Result]) -> Outcome:
    summary = summary_of(results)
    return Outcome(decision or UNPARSED, f"{how} ({summary})", summary, decided_by=how)


def summary_of(results: Sequence[Result]) -> str:
    """`first->second: positive; second->first: no consensus; ...` (an outcome's `raw`)."""
    return "; ".join(f"{r.generator}->{r.discriminator}: {r.decision if r.consensus else NO_CONSENSUS}"
                     for r in results)


def results_of(summary: str) -> list[Result]:
    """The negotiations a recorded summary names (the inverse of summary_of)."""
    found = []
    for part in filter(None, (p.strip() for p in (summary or "").split(";"))):
        pair, _, decision = part.partition(": ")
        gen, _, disc = pair.partition("->")
        agreed = decision != NO_CONSENSUS
        found.append(Result(gen, disc, agreed, decision if agreed else None))
    return found
