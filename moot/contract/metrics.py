"""What a protocol measures: per-unit measures, which one heads a comparison, and the metric sets
its labelled runs report side by side.

- A `Measure` is one number per finished unit, read from its results row (cheap: no transcript
  is opened) or, when `reads_transcript`, from its transcript: an item's `correct`, a
  conference's rounds to agreement. Comparisons between runs pair units (moot.contract.units)
  and compare their measures. `None`: the unit has no such value (not counted).
- `headline` names the measure a comparison of units leads with.
- A `Series` is a trajectory per unit: values per round or per topic, one line per group (a
  conference's judge saying AGREEMENT per topic and round; its evaluator's score per topic).
- A `MetricSet` is a group of classification metrics over a run's labelled units (names from
  moot.metrics.classification.METRICS) shown together in one report table, such as rumour
  detection's accuracy, macro-F1, RF1 and NF1. It applies to a run whose labels define every
  metric of the set; a run no set applies to is reported by its headline metric alone (the
  scenario's `metric:`, else the dataset spec's, else the protocol's default).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from moot.metrics.classification import UNPARSED, defined
from moot.saved.records import ResultRow

if TYPE_CHECKING:
    from moot.log.transcript import Transcript


@dataclass(frozen=True)
class UnitRecord:
    """One finished unit as a measure sees it: its results row, the run's labels, its transcript."""

    row: ResultRow  # a protocol's own keys: `row.extra(key)`
    labels: Sequence[str] = ()
    transcript: Optional[Callable[[], Transcript]] = None  # loads it (None: not available)


@dataclass(frozen=True)
class Measure:
    """One number per unit (see the module docstring)."""

    name: str
    help: str
    of: Callable[[UnitRecord], Optional[float]]
    reads_transcript: bool = False


@dataclass(frozen=True)
class Point:
    """One value of a series: of `group` (e.g. one topic) at `step` (e.g. a round)."""

    group: str
    step: int
    value: float


@dataclass(frozen=True)
class Series:
    """Values over the steps of a unit (its rounds, or its topics in order), one line per group: how
    a deliberation moved. An experiment's report gives each step's mean over seeds per arm
    (moot.experiment.measures); `step` names what a step is ("round", "topic")."""

    name: str
    help: str
    step: str
    of: Callable[[UnitRecord], Sequence[Point]]


@dataclass(frozen=True)
class MetricSet:
    """Classification metrics reported side by side; `columns` pairs each metric with its column
    name in the table (`("accuracy", "acc")`)."""

    name: str  # the table's key (file names, table.csv)
    title: str
    columns: tuple[tuple[str, str], ...]
    classes: Optional[int] = None  # the number of labels the set is for (2: a binary task), if fixed

    @property
    def metrics(self) -> tuple[str, ...]:
        return tuple(metric for metric, _ in self.columns)

    def applies(self, labels: Sequence[str]) -> bool:
        """Whether a run with these labels is the set's task: as many labels as it is for, and
        every metric of the set defined on them."""
        if not labels or (self.classes is not None and len(labels) != self.classes):
            return False
        return all(defined(metric, labels) for metric in self.metrics)


@dataclass(frozen=True)
class Metrics:
    """A protocol's measures, the headline one, and the metric sets of its labelled runs."""

    measures: tuple[Measure, ...]
    headline: str
    sets: tuple[MetricSet, ...] = field(default=())
    series: tuple[Series, ...] = field(default=())  # trajectories over rounds or topics (a conference's)

    def measure(self, name: str) -> Measure:
        return next(m for m in self.measures if m.name == name)

    def set_for(self, labels: Sequence[str]) -> Optional[MetricSet]:
        """The first declared metric set the run's labels define, if any."""
        return next((s for s in self.sets if s.applies(labels)), None)


def _correct(unit: UnitRecord) -> Optional[float]:
    """1 when the prediction is the gold label, 0 otherwise (unparsed is wrong); None: no gold."""
    if not unit.row.labelled:
        return None
    return 1.0 if unit.row.prediction == unit.row.gold else 0.0


def _unparsed(unit: UnitRecord) -> Optional[float]:
    """1 when the reply mapped onto no label (outside the run's labels, or `unparsed`)."""
    prediction = unit.row.prediction
    if unit.labels:
        return 0.0 if prediction in unit.labels else 1.0
    return 1.0 if prediction in (None, UNPARSED) else 0.0


CORRECT = Measure("correct", "1 if the prediction is the gold label, else 0 (unparsed counts as wrong)", _correct)
UNPARSED_MEASURE = Measure("unparsed", "1 if the reply mapped onto no label", _unparsed)
LABELLED = Metrics((CORRECT, UNPARSED_MEASURE), "correct")  # every labelled-item protocol's measures


def with_sets(metrics: Metrics, *sets: MetricSet) -> Metrics:
    """`metrics` with more metric sets declared."""
    return Metrics(metrics.measures, metrics.headline, (*metrics.sets, *sets), metrics.series)
