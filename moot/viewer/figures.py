"""The numbers the viewer shows: a run's headline metric with its interval, and the paired
difference of two runs over the units they share.

Classification metrics come from moot.metrics.classification, a protocol's own measures from its
metrics hook (moot.contract.metrics). Intervals and paired tests come from moot.metrics.stats when
it is installed (the experiments work); without it a figure carries its point estimate and says
why it has no interval, and a comparison counts the units that differ (`STATS_MISSING`).
"""

from __future__ import annotations

import importlib
import math
import statistics
from dataclasses import dataclass
from types import ModuleType
from typing import Optional, Sequence

from moot.metrics.classification import summarize, value_of

STATS_MISSING = "no interval: moot.metrics.stats (experiments) is not installed"


@dataclass(frozen=True)
class Figure:
    """A number with its interval (low/high None: none) and how it was computed."""

    name: str
    value: Optional[float]
    n: int
    low: Optional[float] = None
    high: Optional[float] = None
    method: str = ""

    @property
    def shown(self) -> str:
        return "—" if self.value is None or math.isnan(self.value) else f"{self.value:.3f}"

    @property
    def interval(self) -> str:
        if self.low is None or self.high is None or math.isnan(self.low) or math.isnan(self.high):
            return ""
        return f"[{self.low:.3f}, {self.high:.3f}]"


@dataclass(frozen=True)
class Paired:
    """Two runs on the units they share: each one's figure, the difference (b - a) with its
    interval, and a paired test where one applies."""

    a: Figure
    b: Figure
    difference: Figure
    test: str = ""  # `McNemar exact p = 0.031 (n = 42 discordant of 200)`
    differ: int = 0  # units whose result differs


def stats_module() -> Optional[ModuleType]:
    try:
        return importlib.import_module("moot.metrics.stats")
    except ImportError:
        return None


def classification(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str], metric: str) -> Figure:
    """`metric` over scored items (moot.metrics.classification)."""
    if not gold:
        return Figure(metric, None, 0, method="no scored unit")
    try:
        report = summarize(list(gold), list(pred), list(labels))
        return Figure(metric, value_of(report, metric, list(labels)), len(gold), method=STATS_MISSING)
    except ValueError as exc:  # labels that do not define the metric, gold outside the labels
        return Figure(metric, None, len(gold), method=str(exc))


def mean(name: str, values: Sequence[float]) -> Figure:
    """The mean of a per-unit measure over the units that have one."""
    if not values:
        return Figure(name, None, 0, method="no unit has this measure")
    return Figure(name, statistics.fmean(values), len(values), method=STATS_MISSING)


def paired_means(name: str, a: Sequence[float], b: Sequence[float]) -> Paired:
    """A measure on the same units in two runs (the lists are aligned by unit)."""
    diffs = [y - x for x, y in zip(a, b)]
    differ = sum(1 for d in diffs if d != 0)
    return Paired(mean(name, a), mean(name, b), mean(f"{name} (b - a)", diffs), differ=differ)


def paired_correct(name: str, a: Sequence[float], b: Sequence[float]) -> Paired:
    """Correctness (1/0) of the same items in two runs: accuracy of each, the difference, and the
    discordant pairs (what McNemar's test is over)."""
    found = paired_means(name, a, b)
    b_only = sum(1 for x, y in zip(a, b) if y > x)
    a_only = sum(1 for x, y in zip(a, b) if x > y)
    test = f"discordant items: {a_only} right only in a, {b_only} right only in b (n = {len(a)})"
    return Paired(found.a, found.b, found.difference, test, found.differ)
