"""Two runs side by side, or two arms of an experiment: their units paired, the paired difference
of their headline, and the units where they differ.

A side is one run, or a folder of runs (an arm: every run below it). Units pair as their protocol
says (moot.contract.units: an item by its id, a run of the scenario by its seed), within the run
at the same place below each side (an arm's dataset/model/seed cell), so a unit is only ever
compared with the same unit of the other side.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Optional, Sequence

from moot.contract.units import unit_key
from moot.viewer.figures import Paired, classification, paired_correct, paired_means
from moot.viewer.units import PAGE, Row, RunTable

COMPARE_FILTERS = {
    "differ": "units whose result differs",
    "both": "every unit in both",
    "a-only": "right in a only",
    "b-only": "right in b only",
    "unpaired": "units in one side only",
}


@dataclass(frozen=True)
class Member:
    """One run of a side: where it is below the side, and its table."""

    sub: PurePosixPath
    path: Path
    table: RunTable


@dataclass(frozen=True)
class Pair:
    key: str
    a: Optional[tuple[Member, Row]]
    b: Optional[tuple[Member, Row]]

    @property
    def both(self) -> bool:
        return self.a is not None and self.b is not None

    @property
    def differ(self) -> bool:
        if self.a is None or self.b is None:
            return True
        x, y = self.a[1], self.b[1]
        return (x.prediction, x.status, x.measures) != (y.prediction, y.status, y.measures)


def pair_key(member: Member, row: Row) -> str:
    table = member.table
    ref = table.refs[row.key]
    found = ref.row or {"id": ref.id}
    key = table.contract.units.pair(unit_key(found, table.source.meta)) if table.contract else ref.id
    return f"{member.sub.as_posix()}/{key}" if member.sub.parts else key


def pairs(a: Sequence[Member], b: Sequence[Member]) -> list[Pair]:
    left = {pair_key(m, r): (m, r) for m in a for r in m.table.rows}
    right = {pair_key(m, r): (m, r) for m in b for r in m.table.rows}
    keys = list(left) + [k for k in right if k not in left]
    return [Pair(k, left.get(k), right.get(k)) for k in keys]


def keep(show: str, pair: Pair) -> bool:
    tests: dict[str, Callable[[], bool]] = {
        "differ": lambda: pair.both and pair.differ,
        "both": lambda: pair.both,
        "a-only": lambda: pair.a is not None and pair.b is not None and pair.a[1].correct is True
        and pair.b[1].correct is False,
        "b-only": lambda: pair.a is not None and pair.b is not None and pair.a[1].correct is False
        and pair.b[1].correct is True,
        "unpaired": lambda: not pair.both,
    }
    return tests.get(show, tests["differ"])()


def figures(found: Sequence[Pair]) -> list[Paired]:
    """The paired figures: correctness and the headline metric on shared scored items; else each
    measure the rows carry, on the units both sides have it for."""
    both = [(p.a, p.b) for p in found if p.a is not None and p.b is not None]
    if not both:
        return []
    table = both[0][0][0].table
    scored = [(x[1], y[1]) for x, y in both if x[1].correct is not None and y[1].correct is not None]
    shown: list[Paired] = []
    if scored:
        shown.append(paired_correct("correct", [float(bool(x.correct)) for x, _ in scored],
                                    [float(bool(y.correct)) for _, y in scored]))
        if table.labels:
            gold = [str(x.gold) for x, _ in scored]
            a = classification(gold, [str(x.prediction) for x, _ in scored], table.labels, table.metric)
            b = classification(gold, [str(y.prediction) for _, y in scored], table.labels, table.metric)
            difference = None if a.value is None or b.value is None else b.value - a.value
            shown.append(Paired(a, b, type(a)(f"{table.metric} (b - a)", difference, a.n, method=a.method)))
    for n, measure in enumerate(table.measures):
        values = [(x[1].measures[n], y[1].measures[n]) for x, y in both
                  if len(x[1].measures) > n and len(y[1].measures) > n]
        kept = [(u, v) for u, v in values if u is not None and v is not None]
        if kept:
            shown.append(paired_means(measure.name, [float(u) for u, _ in kept], [float(v) for _, v in kept]))
    return shown


@dataclass(frozen=True)
class ComparePage:
    pairs: list[Pair]
    matched: int
    pages: int
    page: int


def select(found: Sequence[Pair], show: str, page: int) -> ComparePage:
    kept = [p for p in found if keep(show, p)]
    pages = max(1, -(-len(kept) // PAGE))
    page = min(max(page, 1), pages)
    return ComparePage(kept[(page - 1) * PAGE: page * PAGE], len(kept), pages, page)
