"""Fixed-order stages: the speaker policy of a stage whose whole speaking order is known in advance
(COLA's debaters then the judger, debate's agents round by round). A pure function of who has
spoken so far; a conversation that leaves the order is an error, never a silent reorder."""

from __future__ import annotations

from typing import Optional, Sequence


class PolicyError(ValueError):
    """The conversation does not follow the policy (e.g. a resumed transcript of another scenario)."""


def fixed_order(order: tuple[str, ...], spoken: Sequence[str], what: str) -> Optional[str]:
    """The next speaker of a stage whose whole order is known in advance (`what` names it in the
    error), or None when the stage is over."""
    if tuple(spoken) != order[:len(spoken)]:
        raise PolicyError(f"speakers {list(spoken)} do not follow the {what} order {list(order)}")
    return order[len(spoken)] if len(spoken) < len(order) else None
