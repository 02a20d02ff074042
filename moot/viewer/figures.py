"""The numbers the viewer shows, computed as `moot report` and `moot compare` compute them: a run's
headline with its interval, and two runs (or two arms) paired on their units.

- A classification metric: moot.experiment.analysis over the run as one cell (an arm's runs as its
  repeats): the metric with its percentile bootstrap interval over items (over repeats when there
  are two or more), and between two sides Δ = a − b with its paired bootstrap interval, the paired
  t-test over repeats (when they vary) or the paired bootstrap test of the metric over items, and
  the minimum detectable Δ.
- A protocol's own measure (a score, a coverage): the mean with its bootstrap interval, and between
  two sides the paired bootstrap of the mean difference with the Wilcoxon signed-rank test
  (moot.metrics.stats).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Hashable, Optional, Sequence

from moot.experiment.analysis import Cell, Column, arm_stat, compare
from moot.experiment.tables import headline, number, pvalue
from moot.metrics import stats
from moot.metrics.classification import summarize, value_of
from moot.metrics.coded import Resampling
from moot.viewer.deferred import Deferred

INLINE_UNITS = 1000  # up to this many units an interval is computed with its page (~0.1 s here)
BLOCK = 250_000  # weights drawn at a time by a bootstrap (moot.metrics.coded.Resampling): ~8 MB of work arrays


@dataclass(frozen=True)
class Figure:
    """A number with its interval (low/high None: none) and how it was computed."""

    name: str
    value: Optional[float]
    n: int
    low: Optional[float] = None
    high: Optional[float] = None
    method: str = ""
    pending: bool = False  # its interval is still being computed (Intervals)
    signed: bool = False  # a difference: shown with its sign, as `moot compare` prints it
    flags: str = ""  # beside the interval: too few repeats or items, clipped, or no variance (moot.metrics.stats)

    @property
    def shown(self) -> str:
        if self.value is None or math.isnan(self.value):
            return "—"
        return f"{self.value:+.3f}" if self.signed else f"{self.value:.3f}"

    @property
    def interval(self) -> str:
        if self.low is None or self.high is None or math.isnan(self.low) or math.isnan(self.high):
            return self.flags
        return f"[{self.low:.3f}, {self.high:.3f}]" + (f" ({self.flags})" if self.flags else "")


@dataclass(frozen=True)
class Paired:
    """Two sides on the units they share: each one's figure, the difference (a − b, the sign of
    `moot compare A B`) with its interval, and the paired test."""

    a: Figure
    b: Figure
    difference: Figure
    test: str = ""  # `paired bootstrap test over items (…): p = 0.250 (70 of 2000 draws past zero) · MDE 0.350 · 12 paired, …`
    differ: int = 0  # units whose result differs


@dataclass(frozen=True)
class Scored:
    """One labelled unit of both sides: its repeat (the run below each side), id, gold, predictions."""

    repeat: int
    id: str
    gold: str
    a: Optional[str]
    b: Optional[str]


def of_interval(name: str, found: stats.Interval, signed: bool = False) -> Figure:
    method = f"{found.method}; {found.note}" if found.note else found.method
    flags = found.note if found.note == stats.NO_VARIANCE else "; ".join(found.flags)
    return Figure(name, found.estimate, found.n, found.low, found.high, method, signed=signed, flags=flags)


def unlabelled(gold: Sequence[str], labels: Sequence[str]) -> str:
    """Why a classification metric is undefined on these labels ('' when it is defined)."""
    outside = sorted(set(gold) - set(labels))
    return f"gold label {outside[0]!r} is not one of the run's labels" if outside else ""


def resampling(n: int) -> Resampling:
    """moot report's bootstrap (the same draws) for n units, its weights drawn a block at a time
    instead of kept, so a server's memory does not grow with the run."""
    return Resampling(stats.RESAMPLES, stats.SEED, batch=max(1, BLOCK // max(1, n)), keep_weights=False)


def cells(arm: str, units: Sequence[Scored], side: str, labels: Sequence[str]) -> list[Cell]:
    """A side's units as one cell per repeat (moot.experiment.analysis)."""
    found = []
    for repeat in sorted({u.repeat for u in units}):
        mine = [u for u in units if u.repeat == repeat]
        found.append(Cell(arm, "", "", repeat, tuple(labels), {u.id: u.gold for u in mine},
                          {u.id: getattr(u, side) for u in mine}))
    return found


def point(gold: Sequence[str], pred: Sequence[Optional[str]], labels: Sequence[str], metric: str) -> Figure:
    """`metric` over one run's scored items, without its interval (moot.metrics.classification)."""
    if not gold:
        return Figure(metric, None, 0, method="no scored unit")
    why = unlabelled(gold, labels)
    try:
        value = None if why else value_of(summarize(list(gold), [str(p) for p in pred], list(labels)), metric,
                                          list(labels))
    except ValueError as exc:  # a metric the labels do not define
        why = str(exc)
    return Figure(metric, None if why else value, len(gold), method=why)


def classification(gold: Sequence[str], pred: Sequence[Optional[str]], labels: Sequence[str], metric: str) -> Figure:
    """`metric` over one run's scored items, with its bootstrap interval over items."""
    found = point(gold, pred, labels, metric)
    if found.value is None:
        return found
    units = [Scored(0, str(n), g, p, None) for n, (g, p) in enumerate(zip(gold, pred))]
    stat = arm_stat(cells("run", units, "a", labels), Column("", metric), boot=resampling(len(units)))
    return of_interval(metric, headline(stat)) if stat else found


def mean(name: str, values: Sequence[float]) -> Figure:
    """The mean of a per-unit measure over the units that have one, with its bootstrap interval."""
    if not values:
        return Figure(name, None, 0, method="no unit has this measure")
    return of_interval(name, stats.bootstrap_interval(values, stats.mean))


def paired_classification(units: Sequence[Scored], labels: Sequence[str], metric: str, differ: int) -> Paired:
    """Side a against side b (the reference) on their shared labelled units, as `moot compare A B`
    (a − b)."""
    column = Column("", metric)
    why = unlabelled([u.gold for u in units], labels)
    found = None
    if not why:
        a, b = cells("a", units, "a", labels), cells("b", units, "b", labels)
        boot = resampling(max(len(c.gold) for c in a))
        try:
            found = (arm_stat(a, column, boot=boot), arm_stat(b, column, boot=boot), compare(a, b, column, boot=boot))
        except ValueError as exc:  # a metric the labels do not define
            why = str(exc)
    if found is None or None in found:
        missing = Figure(metric, None, len(units), method=why or "no unit in every repeat of both sides")
        return Paired(missing, missing, Figure(f"{metric} (a − b)", None, len(units), method=missing.method),
                      missing.method, differ)
    stat_a, stat_b, c = found
    assert stat_a is not None and stat_b is not None and c is not None
    test = c.test
    detail = f" ({test.note})" if test.note else ""
    said = (f"{test.method}: p = {pvalue(c.pvalue)}{detail} · MDE {number(c.mde.estimate)}"
            f" · {c.paired} paired, {c.dropped} dropped")
    return Paired(of_interval(metric, headline(stat_a)), of_interval(metric, headline(stat_b)),
                  of_interval(f"{metric} (a − b)", c.delta, signed=True), said, differ)


def paired_means(name: str, a: Sequence[float], b: Sequence[float]) -> Paired:
    """A measure on the same units in two runs (the lists are aligned by unit): each mean, the mean
    difference with its paired bootstrap interval, and the Wilcoxon signed-rank test."""
    differ = sum(1 for x, y in zip(a, b) if x != y)
    difference = of_interval(f"{name} (a − b)", stats.paired_bootstrap(a, b, stats.mean), signed=True)
    test = stats.wilcoxon(a, b)
    detail = f" ({test.note})" if test.note else ""
    return Paired(mean(name, a), mean(name, b), difference, f"{test.method}: p = {pvalue(test.pvalue)}{detail}",
                  differ)


class Intervals(Deferred):
    """Headline figures whose interval takes long (more than INLINE_UNITS units): until it is
    computed (moot.viewer.deferred) a page shows the point estimate, marked pending, and its live
    stream updates it. `inline` (the bundle): every interval is computed at once."""

    def figure(self, key: Hashable, n: int, full: Callable[[], Figure], quick: Callable[[], Figure]) -> Figure:
        ready, found = self.value(("figure", key), n <= INLINE_UNITS, full)
        if ready and isinstance(found, Figure):
            return found
        shown = quick()
        return replace(shown, pending=True, method="its interval is being computed") if shown.value is not None \
            else shown

    def settled(self, key: Hashable, shown: Figure) -> Figure:
        """`shown` (a figure `figure` gave under `key`), or its interval once it is computed."""
        if not shown.pending:
            return shown
        ready, found = self.known(("figure", key))
        return found if ready and isinstance(found, Figure) else shown
