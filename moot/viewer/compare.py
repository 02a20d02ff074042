"""Two runs side by side, or two arms of an experiment: their units paired, the paired difference
of their headline, and the units where they differ.

A side is one run, or a folder of runs (an arm: every run below it). Units pair as their protocol
says (moot.contract.units: an item by its id, a run of the scenario by its seed), within the run
at the same place below each side (an arm's dataset/model/seed cell), so a unit is only ever
compared with the same unit of the other side. The figures are those of `moot compare`
(moot.viewer.figures): an arm's runs at DATASET/MODEL/seed-S are the repeats of its DATASET/MODEL.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Optional, Sequence

from moot.contract.units import unit_key
from moot.saved.records import ResultRow
from moot.viewer.figures import Paired, Scored, paired_classification, paired_means
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
    key: str  # sub/unit: what pairs it
    a: Optional[tuple[Member, Row]]
    b: Optional[tuple[Member, Row]]
    sub: PurePosixPath = PurePosixPath()  # the run below each side
    unit: str = ""  # the unit's key within that run

    @property
    def both(self) -> bool:
        return self.a is not None and self.b is not None

    @property
    def differ(self) -> bool:
        if self.a is None or self.b is None:
            return True
        x, y = self.a[1], self.b[1]
        return (x.prediction, x.status, x.measures) != (y.prediction, y.status, y.measures)


def unit_of(member: Member, row: Row) -> str:
    """What pairs a unit within its run (its protocol's pairing key)."""
    table = member.table
    ref = table.refs[row.key]
    found = ref.result or ResultRow(id=ref.id)
    return table.contract.units.pair(unit_key(found, table.source.record)) if table.contract else ref.id


def pairs(a: Sequence[Member], b: Sequence[Member]) -> list[Pair]:
    def keyed(side: Sequence[Member]) -> dict[tuple[PurePosixPath, str], tuple[Member, Row]]:
        return {(m.sub, unit_of(m, r)): (m, r) for m in side for r in m.table.rows}

    left, right = keyed(a), keyed(b)
    keys = list(left) + [k for k in right if k not in left]
    return [Pair(f"{sub.as_posix()}/{unit}" if sub.parts else unit, left.get((sub, unit)), right.get((sub, unit)),
                 sub, unit) for sub, unit in keys]


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


Joined = tuple[Pair, Member, Row, Row]  # a pair in both sides: the pair, a's run, a's row, b's row


def group_of(pair: Pair) -> PurePosixPath:
    """The runs an arm's run repeats (DATASET/MODEL of DATASET/MODEL/seed-S; nothing for a run)."""
    return pair.sub.parent if pair.sub.parts else pair.sub


def figures(found: Sequence[Pair]) -> list[tuple[str, Paired]]:
    """The paired figures, per group of runs (an arm's DATASET/MODEL; "" for two runs): the run's
    classification metrics on shared scored items, then each measure the rows carry."""
    both = [(p, p.a[0], p.a[1], p.b[1]) for p in found if p.a is not None and p.b is not None]
    groups = sorted({group_of(j[0]) for j in both})
    return [(group.as_posix() if group.parts else "", paired) for group in groups
            for paired in group_figures([j for j in both if group_of(j[0]) == group])]


def group_figures(both: Sequence[Joined]) -> list[Paired]:
    """One group's figures: its runs below each side (seed-S) are repeats (moot.viewer.figures)."""
    table = both[0][1].table
    repeats = {sub: n for n, sub in enumerate(sorted({p.sub for p, _, _, _ in both}))}
    units = [Scored(repeats[p.sub], p.unit, str(x.gold), x.prediction, y.prediction) for p, _, x, y in both
             if x.correct is not None and y.correct is not None]
    shown: list[Paired] = []
    if units and table.labels:
        differ = sum(1 for u in units if u.a != u.b)
        for metric in dict.fromkeys(("accuracy", table.metric)):
            shown.append(paired_classification(units, table.labels, metric, differ))
    for n, measure in enumerate(table.measures):
        values = [(x.measures[n], y.measures[n]) for _, _, x, y in both if len(x.measures) > n and len(y.measures) > n]
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
