"""One negotiation of Sun et al.: generator and discriminator alternate until consensus.

generator -> discriminator; the discriminator's attitude "yes" is a consensus and ends it;
"no" (or an unreadable reply) sends the turn back to the generator, until `max_turns`
generator/discriminator exchanges have been made. Pure function of the turns so far
(speaker, and for discriminator turns the decision "yes"/"no").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from moot.kit import PolicyError
from moot.speaker_selection.conference import Turn

AGREE = "yes"


@dataclass(frozen=True)
class NegotiationPlan:
    generator: str
    discriminator: str
    max_turns: int = 3

    def __post_init__(self) -> None:
        if self.max_turns < 1 or self.generator == self.discriminator:
            raise ValueError("a negotiation needs max_turns >= 1 and two distinct agents")


def next_speaker(plan: NegotiationPlan, turns: Sequence[Turn]) -> Optional[str]:
    expected = [plan.generator, plan.discriminator]
    for n, turn in enumerate(turns):
        if turn.speaker != expected[n % 2]:
            raise PolicyError(f"turn {n + 1} is {turn.speaker}'s but should be {expected[n % 2]}'s")
    if not turns:
        return plan.generator
    last = turns[-1]
    if last.speaker == plan.generator:
        return plan.discriminator
    if last.decision == AGREE or len(turns) // 2 >= plan.max_turns:
        return None
    return plan.generator
