"""COLA's reasoning-enhanced debating stage (Lan et al. §3): who speaks next.

One debater per stance argues once per round, in label order (the paper uses one round); after
the last round the judger concludes and the stage ends. Without the debating stage (ablation)
there are no debaters and the judger speaks first. Pure function of who has spoken so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from moot.kit import fixed_order


@dataclass(frozen=True)
class DebatePlan:
    debaters: tuple[str, ...]
    judger: str
    rounds: int = 1

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise ValueError("a debate needs at least one round")
        if self.judger in self.debaters or len(set(self.debaters)) != len(self.debaters):
            raise ValueError("debaters and judger must have distinct names")

    def order(self) -> tuple[str, ...]:
        """The full speaking order of the stage."""
        return self.debaters * self.rounds + (self.judger,)


def next_speaker(plan: DebatePlan, spoken: Sequence[str]) -> Optional[str]:
    """The next speaker after `spoken` (names, in order), or None when the stage is over."""
    return fixed_order(plan.order(), spoken, "COLA")
