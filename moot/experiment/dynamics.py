"""Deliberation dynamics of arms whose protocol records answers per round (its `rounds` hook).

Per round, over every unit of an arm (its repeats pooled): the accuracy of the agents' answers with a
95 % percentile bootstrap interval over units; the share of units whose agents all agree; and from
round 1 on, the answers that changed from right to wrong and from wrong to right, and the share of
agents that changed to the previous round's majority (of those that changed). Unparsed answers are
wrong and agree with nothing. A unit whose deliberation ended early (S2MAD's debaters agreed) keeps
its last answers in the rounds it did not need.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import numpy as np

from moot.experiment.tables import interval, number, span
from moot.metrics import stats
from moot.report.formats import Grid

Rounds = Sequence[Sequence[Optional[str]]]


@dataclass(frozen=True)
class RoundStat:
    round: int
    accuracy: stats.Interval
    agreement: float
    right_to_wrong: float  # share of the round's answers
    wrong_to_right: float
    to_majority: float  # of the answers that changed, the share that took the previous majority


def _majority(answers: Sequence[Optional[str]]) -> Optional[str]:
    top = Counter(a for a in answers if a is not None).most_common(2)
    return top[0][0] if top and (len(top) == 1 or top[0][1] > top[1][1]) else None


def round_stats(units: Sequence[tuple[str, Rounds]], resamples: int = stats.RESAMPLES) -> list[RoundStat]:
    """`units`: (gold, answers per round) of every unit of one arm (module docstring)."""
    depth = max((len(r) for _, r in units), default=0)
    units = [(gold, [*rounds, *[rounds[-1]] * (depth - len(rounds))]) for gold, rounds in units if rounds]
    found = []
    for r in range(depth):
        right = np.array([np.mean([a == gold for a in rounds[r]]) if rounds[r] else 0.0 for gold, rounds in units])
        agree = np.mean([len(set(rounds[r])) == 1 and rounds[r][0] is not None for _, rounds in units])
        changed = to_wrong = to_right = to_major = total = 0
        if r:
            for gold, rounds in units:
                major = _majority(rounds[r - 1])
                for before, after in zip(rounds[r - 1], rounds[r]):
                    total += 1
                    if before != after:
                        changed += 1
                        to_wrong += before == gold
                        to_right += after == gold
                        to_major += after is not None and after == major
        interval = stats.bootstrap_interval(right, stats.mean, resamples)
        found.append(RoundStat(r, interval, float(agree), to_wrong / total if total else 0.0,
                               to_right / total if total else 0.0, to_major / changed if changed else 0.0))
    return found


def dynamics_grid(by_arm: Mapping[str, list[RoundStat]], title: str) -> Grid:
    head = ("arm", "round", "accuracy", "95% CI", "all agree", "right→wrong", "wrong→right", "changed to majority")
    rows = tuple((arm, str(s.round), number(s.accuracy.estimate), interval(s.accuracy), number(s.agreement),
                  *(("–",) * 3 if not s.round else map(number, (s.right_to_wrong, s.wrong_to_right, s.to_majority))))
                 for arm, found in by_arm.items() for s in found)
    notes = ("Accuracy: the share of the agents' answers that are right (unparsed is wrong), repeats pooled, 95% "
             "percentile bootstrap over units. right→wrong, wrong→right: shares of the round's answers; changed to "
             "majority: of the answers that changed, the share that took the previous round's majority.",)
    return Grid(title, head, rows, notes, key="dynamics",
                columns=(("arm",), ("round",), ("accuracy",), span("ci"), ("all_agree",), ("right_to_wrong",),
                         ("wrong_to_right",), ("changed_to_majority",)))
