"""S2MAD's multi-agent debate (Zhang et al., Alg. 1 lines 12-21): who speaks next.

Round j = 1..M: D_p then D_n (each answers the other's round j-1 reply). After round M, or at
once when M = 0 (moot's variant; the paper's w/o Debate is one agent and no debate at all), the
debaters' last answers decide: the same parsed label is a consensus and the debate ends;
otherwise the judge speaks once. Pure function of the turns so far, each a speaker and the
label its reply was parsed to (None if unparsed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from moot.kit import PolicyError
from moot.speaker_selection.conference import Turn


@dataclass(frozen=True)
class S2madPlan:
    debater_p: str
    debater_n: str
    judge: str
    rounds: int = 2

    def __post_init__(self) -> None:
        if self.rounds < 0:
            raise ValueError("rounds must be >= 0")
        if len({self.debater_p, self.debater_n, self.judge}) != 3:
            raise ValueError("debaters and judge must have distinct names")


def consensus(p_label: Optional[str], n_label: Optional[str]) -> Optional[str]:
    """The shared label of the two last answers, or None (no consensus; unparsed never agrees)."""
    return p_label if p_label is not None and p_label == n_label else None


def next_speaker(plan: S2madPlan, turns: Sequence[Turn], initial: tuple[Optional[str], Optional[str]]
                 ) -> Optional[str]:
    """Next speaker, or None when the debate is over. `initial`: labels of h_p^0 and h_n^0."""
    debate = [plan.debater_p, plan.debater_n] * plan.rounds
    spoken = [t.speaker for t in turns]
    if spoken[:len(debate)] != debate[:len(spoken)]:
        raise PolicyError(f"speakers {spoken} do not follow the S2MAD order {debate + [plan.judge]}")
    if len(spoken) < len(debate):
        return debate[len(spoken)]
    if len(spoken) > len(debate):
        if spoken[len(debate):] != [plan.judge]:
            raise PolicyError(f"only the judge may speak after the last round, got {spoken[len(debate):]}")
        return None
    last = (turns[-2].decision, turns[-1].decision) if plan.rounds else initial
    return None if consensus(*last) else plan.judge
