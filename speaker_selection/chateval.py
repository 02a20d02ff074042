"""ChatEval (Chan et al. 2023): who speaks next in a referee panel, and what each turn is shown.

The panel talks for T turns (a turn: every referee speaks once), in one of the paper's three
communication strategies, as thunlp/ChatEval's code runs them (commit 3bb65ab):

- `one_by_one` (order `sequential`): the referees speak in order; each sees every message
  before it, its own included (visibility `all`, updater `basic`).
- `simultaneous` (order `concurrent`): a turn's referees speak at once; each sees the messages
  of the earlier turns only.
- `simultaneous_summarizer` (memory manipulator `summary`): as `simultaneous`, but before each
  turn after the first, the summarizer writes one summary per referee of what that referee has
  seen (its earlier summaries included); the summary is added to that referee's history, after
  the raw messages, which stay (the code's; secondary descriptions of the paper say the summary
  replaces them).

A turn of the panel is a position in `schedule()`; `next_speaker` is a pure function of who has
spoken so far, and `shown(p)` the earlier positions turn p sees, in the order its history lists
them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional, Sequence

from moot.kit import fixed_order

Strategy = Literal["one_by_one", "simultaneous", "simultaneous_summarizer"]
STRATEGIES: tuple[Strategy, ...] = ("one_by_one", "simultaneous", "simultaneous_summarizer")
SUMMARIZER = "summarizer"


@dataclass(frozen=True)
class Turn:
    """One position of the panel: who speaks, in which turn (1-based), and for which referee
    (a referee's own turn, or the summary written for it)."""

    speaker: str
    round: int
    referee: str

    @property
    def summary(self) -> bool:
        return self.speaker == SUMMARIZER


@dataclass(frozen=True)
class PanelPlan:
    referees: tuple[str, ...]
    turns: int = 2
    strategy: Strategy = "one_by_one"

    def __post_init__(self) -> None:
        if not self.referees or len(set(self.referees)) != len(self.referees) or SUMMARIZER in self.referees:
            raise ValueError(f"a panel needs at least one referee, with distinct names other than {SUMMARIZER!r}")
        if self.turns < 1:
            raise ValueError("turns must be >= 1")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}")

    def schedule(self) -> tuple[Turn, ...]:
        """Every position in order: per turn, its summaries (summarizer strategy, turns >= 2), then
        the referees."""
        found: list[Turn] = []
        for r in range(1, self.turns + 1):
            if self.strategy == "simultaneous_summarizer" and r > 1:
                found += [Turn(SUMMARIZER, r, referee) for referee in self.referees]
            found += [Turn(referee, r, referee) for referee in self.referees]
        return tuple(found)

    def order(self) -> tuple[str, ...]:
        return tuple(t.speaker for t in self.schedule())

    def final(self, position: int) -> bool:
        """Whether the position is a referee's turn in the last turn (the one that gives scores)."""
        turn = self.schedule()[position]
        return not turn.summary and turn.round == self.turns

    def shown(self, position: int) -> tuple[int, ...]:
        """The earlier positions turn `position` sees (see the module docstring)."""
        schedule = self.schedule()
        turn = schedule[position]
        if self.strategy == "one_by_one":
            return tuple(range(position))
        found = []
        for p, earlier in enumerate(schedule[:position]):
            if not earlier.summary:
                if earlier.round < turn.round:
                    found.append(p)
            elif earlier.referee == turn.referee and earlier.round <= turn.round:
                found.append(p)
        return tuple(found)

    def together(self, position: int) -> tuple[int, ...]:
        """The positions whose calls start with this one's: its own alone (one by one), else the
        turn's referees, or the turn's summaries (none of them sees another)."""
        if self.strategy == "one_by_one":
            return (position,)
        schedule = self.schedule()
        turn = schedule[position]
        return tuple(p for p, t in enumerate(schedule) if t.round == turn.round and t.summary == turn.summary)


def next_speaker(plan: PanelPlan, spoken: Sequence[str]) -> Optional[str]:
    """The next speaker after `spoken` (names, in order), or None when the panel is over."""
    return fixed_order(plan.order(), spoken, "ChatEval panel")
