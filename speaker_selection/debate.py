"""Multi-agent debate (Du et al. 2023): who speaks next.

Round 0: every agent answers once, in agent order. Rounds 1..R: every agent answers again, in
the same order, after seeing the others' previous answers. The debate ends after round R
(R = 0: the independent answers only). Pure function of who has spoken so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from moot.kit import fixed_order


@dataclass(frozen=True)
class DebatePlan:
    agents: tuple[str, ...]
    rounds: int = 2

    def __post_init__(self) -> None:
        if not self.agents or len(set(self.agents)) != len(self.agents):
            raise ValueError("a debate needs at least one agent, with distinct names")
        if self.rounds < 0:
            raise ValueError("rounds must be >= 0")

    def order(self) -> tuple[str, ...]:
        """The full speaking order: the agents once per round, rounds 0..R."""
        return self.agents * (self.rounds + 1)

    def round_of(self, turn: int) -> int:
        """The round of the turn at 0-based position `turn`."""
        return turn // len(self.agents)


def next_speaker(plan: DebatePlan, spoken: Sequence[str]) -> Optional[str]:
    """The next speaker after `spoken` (names, in order), or None when the debate is over."""
    return fixed_order(plan.order(), spoken, "debate")
