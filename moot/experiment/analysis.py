"""From finished cells to findings: each arm's metric with its intervals, and each arm against the
reference with paired statistics — computed from saved results only (no model call).

A `Cell` is one finished run of the grid: an arm on a dataset with a model and a seed, holding each
labelled unit's gold label and prediction. For one dataset, model, metric and column (all items,
or one target's) the analysis gives

- per arm (`ArmStat`): the metric of each repeat; their mean with a t interval over repeats; a
  bootstrap interval over items (items resampled jointly across repeats); the seed spread (sd
  over repeats) apart from the item spread (bootstrap standard error within a run); n items;
- per arm against the reference (`Comparison`), on the units both have (same item ids and seeds;
  how many were paired and dropped is stated): Δ = arm − reference with a paired bootstrap
  interval over items; tests that fit the column's metric: the paired t-test of the metric over
  repeats (COLA's Table 2), the paired bootstrap test of the metric over items (from the same
  draws as Δ's interval), the Wilcoxon signed-rank test over repeats, and, for accuracy alone, the
  exact McNemar test on the correctness of every paired unit; Holm's adjustment over the arms
  compared with the reference; the minimum detectable Δ at 80 % power for the n.

The test a p-value is of (`primary`): the one the experiment names, else the paired t-test when
two or more repeats vary, else the paired bootstrap test (one repeat, or repeats without variance).

Methods are named in `METHODS` for the notes under a table (moot.experiment.tables).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Mapping, Optional, Sequence

import numpy as np

from moot.metrics import stats
from moot.metrics.coded import Floats, Resampling, features, score, value

Test = str  # a key of TEST_NAMES
TEST_NAMES = {
    "paired_t": "paired t-test of the column's metric over repeats",
    "bootstrap": f"paired bootstrap test of the column's metric over items (B = {stats.RESAMPLES}, seed {stats.SEED})",
    "wilcoxon": "Wilcoxon signed-rank test of the column's metric over repeats",
    "mcnemar": "exact McNemar test on the correctness of every paired unit (accuracy)",
}


def suited(test: Test, metric: str) -> bool:
    """Whether `test` tests `metric` itself: McNemar's counts of right and wrong answers test
    accuracy alone; the others test the metric's own values (over repeats or resampled items)."""
    return test != "mcnemar" or metric == "accuracy"


@dataclass(frozen=True)
class Cell:
    """One finished run of the grid (see the module docstring); `gold`/`pred` by unit id."""

    arm: str
    dataset: str
    model: str
    seed: int
    labels: tuple[str, ...]
    gold: Mapping[str, str]
    pred: Mapping[str, Optional[str]]
    partial: bool = False
    memo: dict[object, object] = field(default_factory=dict, compare=False, repr=False)  # ids, features

    def ids(self, targets: Optional[Mapping[str, str]], target: Optional[str]) -> frozenset[str]:
        """The labelled units (of one target), kept: a report asks for them per metric and arm pair.
        Every target's are found in one pass over the units."""
        return self._by_target(targets).get(target, frozenset())

    def _by_target(self, targets: Optional[Mapping[str, str]]) -> dict[Optional[str], frozenset[str]]:
        """The units by target (None: all of them), kept with the targets they were read with (the
        report's, one per dataset) and forgotten, with what was derived from them, for others."""
        kept = self.memo.get("targets")
        if not isinstance(kept, tuple) or kept[0] is not targets:
            found: dict[Optional[str], set[str]] = defaultdict(set)
            get = (targets or {}).get
            for i in self.gold:
                found[get(i)].add(i)
            by_target: dict[Optional[str], frozenset[str]] = {t: frozenset(ids) for t, ids in found.items()
                                                              if t is not None}
            by_target[None] = frozenset(self.gold)
            self.memo.clear()
            self.memo["targets"] = (targets, by_target)
            return by_target
        return kept[1]  # type: ignore[no-any-return]

    def features(self, ids: Sequence[str], key: int) -> Floats:
        """The feature matrix of these units (moot.metrics.coded.features), kept under `key`: rows
        of the matrix of all the cell's units, made once."""
        memo = ("features", key)
        if memo not in self.memo:
            if "all" not in self.memo:
                every = list(self.gold)
                self.memo["all"] = ({i: row for row, i in enumerate(every)},
                                    features([self.gold[i] for i in every], [self.pred.get(i) for i in every], self.labels))
            kept: tuple[dict[str, int], Floats] = self.memo["all"]  # type: ignore[assignment]
            rows, matrix = kept
            self.memo[memo] = matrix[np.fromiter((rows[i] for i in ids), dtype=np.int64, count=len(ids))]
        found: Floats = self.memo[memo]  # type: ignore[assignment]
        return found


@dataclass(frozen=True)
class Column:
    """What a table column measures: a metric over a dataset's items, or one target's."""

    dataset: str
    metric: str
    target: Optional[str] = None

    @property
    def name(self) -> str:
        return f"{self.dataset}: {self.target} ({self.metric})" if self.target else f"{self.dataset} ({self.metric})"


@dataclass(frozen=True)
class ArmStat:
    arm: str
    values: tuple[float, ...]  # one per repeat, in seed order
    seeds: tuple[int, ...]
    over_repeats: stats.Interval
    over_items: stats.Interval
    spread: stats.Spread
    items: int
    partial: bool = False

    @property
    def mean(self) -> float:
        return self.over_repeats.estimate


@dataclass(frozen=True)
class Comparison:
    arm: str
    reference: str
    delta: stats.Interval  # arm − reference
    paired_t: stats.Test
    mcnemar: stats.Test
    mde: stats.Interval
    paired: int  # units (item x seed) in both arms
    dropped: int  # units of either arm without their pair
    primary: Test
    adjusted: float = math.nan  # Holm-adjusted p-value of the primary test
    bootstrap: stats.Test = stats.Test(math.nan, math.nan, 0, "paired bootstrap test over items")
    wilcoxon: stats.Test = stats.Test(math.nan, math.nan, 0, "Wilcoxon signed-rank test over repeats")

    @property
    def test(self) -> stats.Test:
        """The primary test (module docstring)."""
        found: stats.Test = getattr(self, self.primary)
        return found

    @property
    def pvalue(self) -> float:
        return self.test.pvalue


@dataclass(frozen=True)
class Analysis:
    column: Column
    model: str
    arms: tuple[ArmStat, ...]
    comparisons: tuple[Comparison, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def arm(self, name: str) -> Optional[ArmStat]:
        return next((a for a in self.arms if a.arm == name), None)

    def comparison(self, name: str) -> Optional[Comparison]:
        return next((c for c in self.comparisons if c.arm == name), None)


def _matrices(cells: Sequence[Cell], ids: Sequence[str]) -> list[Floats]:
    key = hash(tuple(ids))
    return [c.features(ids, key) for c in cells]


def common_ids(cells: Sequence[Cell], targets: Optional[Mapping[str, str]], target: Optional[str]) -> list[str]:
    """The items every cell has (so repeats are resampled jointly); kept on the first cell, since a
    report asks for the same cells' items for every metric."""
    for cell in cells:
        cell.ids(targets, target)  # each cell's units read with these targets (a memo of others forgotten)
    key = ("common", target, tuple((c.arm, c.dataset, c.model, c.seed) for c in cells[1:]))
    if key not in cells[0].memo:
        found = cells[0].ids(targets, target)
        for cell in cells[1:]:
            found = found & cell.ids(targets, target)
        cells[0].memo[key] = sorted(found)
    kept: list[str] = cells[0].memo[key]  # type: ignore[assignment]
    return list(kept)


def _count_key(cell: Cell, ids: Sequence[str], key: int) -> tuple[object, ...]:
    return cell.arm, cell.dataset, cell.model, cell.seed, len(ids), key


def _counts(boot: Resampling, cells: Sequence[Cell], ids: Sequence[str], runs: Sequence[Floats]) -> list[Floats]:
    """Each run's counts under the shared resampling (kept by cell and item set)."""
    key = hash(tuple(ids))
    return [boot.counts(_count_key(c, ids, key), run) for c, run in zip(cells, runs)]


def _prefill(boot: Resampling, groups: Sequence[Sequence[Cell]], targets: Optional[Mapping[str, str]],
             target: Optional[str]) -> None:
    """The counts every arm of one column needs, in one matrix product per item set."""
    by_ids: dict[tuple[str, ...], list[Cell]] = defaultdict(list)
    for cells in groups:
        by_ids[tuple(common_ids(cells, targets, target))] += cells
    for ids, cells in by_ids.items():
        if ids:
            key = hash(ids)
            boot.prefill([(_count_key(c, ids, key), run) for c, run in zip(cells, _matrices(cells, ids))])


def _mean_score(counts: Sequence[Floats], metric: str, labels: Sequence[str]) -> Floats:
    return np.asarray(sum(score(c, metric, labels) for c in counts) / len(counts), dtype=np.float64)


METRIC_RANGE = (0.0, 1.0)  # every classification metric's


def arm_stat(cells: Sequence[Cell], column: Column, targets: Optional[Mapping[str, str]] = None,
             resamples: int = stats.RESAMPLES, boot: Optional[Resampling] = None) -> Optional[ArmStat]:
    """One arm's metric on one column over its repeats (cells of one arm, dataset and model)."""
    boot = boot or Resampling(resamples, stats.SEED)
    cells = sorted(cells, key=lambda c: c.seed)
    ids = common_ids(cells, targets, column.target)
    if not ids:
        return None
    labels = cells[0].labels
    runs = _matrices(cells, ids)
    values = tuple(value(run, column.metric, labels) for run in runs)
    counts = _counts(boot, cells, ids, runs)
    mean = float(np.mean(values))
    over_items = stats.percentile_interval(mean, _mean_score(counts, column.metric, labels), len(ids),
                                           boot.resamples, boot.seed)
    errors = [stats.standard_error(score(c, column.metric, labels)) for c in counts]
    return ArmStat(cells[0].arm, values, tuple(c.seed for c in cells), stats.t_interval(values, bounds=METRIC_RANGE),
                   over_items, stats.spread(values, errors), len(ids), any(c.partial for c in cells))


def _paired_units(a: Sequence[Cell], b: Sequence[Cell], targets: Optional[Mapping[str, str]],
                  target: Optional[str]) -> tuple[list[Cell], list[Cell], list[str], int, int]:
    """Cells of both arms on their shared seeds, the items all of them have, paired and dropped units."""
    seeds = sorted({c.seed for c in a} & {c.seed for c in b})
    left = [next(c for c in a if c.seed == s) for s in seeds]
    right = [next(c for c in b if c.seed == s) for s in seeds]
    ids = common_ids([*left, *right], targets, target) if seeds else []
    total = sum(len(c.ids(targets, target)) for c in [*a, *b])
    return left, right, ids, len(ids) * len(seeds), total - 2 * len(ids) * len(seeds)


def compare(arm: Sequence[Cell], reference: Sequence[Cell], column: Column,
            targets: Optional[Mapping[str, str]] = None, resamples: int = stats.RESAMPLES,
            boot: Optional[Resampling] = None) -> Optional[Comparison]:
    """`arm` against `reference` on one column (module docstring); None: no unit in common."""
    boot = boot or Resampling(resamples, stats.SEED)
    left, right, ids, paired, dropped = _paired_units(arm, reference, targets, column.target)
    if not ids:
        return None
    labels = left[0].labels
    a_runs, b_runs = _matrices(left, ids), _matrices(right, ids)
    a_values = [value(r, column.metric, labels) for r in a_runs]
    b_values = [value(r, column.metric, labels) for r in b_runs]
    deltas = _mean_score(_counts(boot, left, ids, a_runs), column.metric, labels) - \
        _mean_score(_counts(boot, right, ids, b_runs), column.metric, labels)
    estimate = float(np.mean(a_values) - np.mean(b_values))
    interval = stats.percentile_interval(estimate, deltas, len(ids), boot.resamples, boot.seed, paired=True)
    a_right = np.concatenate([r[:, 0] for r in a_runs])
    b_right = np.concatenate([r[:, 0] for r in b_runs])
    t_test = stats.paired_t(a_values, b_values)
    if not math.isnan(t_test.pvalue):
        mde = stats.mde_paired(stats.sd_difference(a_values, b_values), len(left))
    else:  # one repeat, or repeats without variance: from the paired bootstrap's standard error
        mde = stats.mde_normal(stats.standard_error(deltas), len(ids))
    return Comparison(left[0].arm, right[0].arm, interval, t_test, stats.mcnemar_exact(a_right, b_right), mde, paired,
                      dropped, "bootstrap" if math.isnan(t_test.pvalue) else "paired_t",
                      bootstrap=stats.bootstrap_test(deltas, len(ids), boot.resamples, boot.seed),
                      wilcoxon=stats.wilcoxon(a_values, b_values))


def with_holm(comparisons: Sequence[Comparison], test: Optional[Test] = None) -> tuple[Comparison, ...]:
    """The comparisons with Holm-adjusted p-values of their primary test (or `test` for all)."""
    chosen = [c if test is None else replace(c, primary=test) for c in comparisons]
    adjusted = stats.holm([c.pvalue for c in chosen])
    return tuple(replace(c, adjusted=p) for c, p in zip(chosen, adjusted))


def group(cells: Sequence[Cell]) -> dict[tuple[str, str, str], list[Cell]]:
    """Cells by (arm, dataset, model)."""
    found: dict[tuple[str, str, str], list[Cell]] = defaultdict(list)
    for cell in cells:
        found[(cell.arm, cell.dataset, cell.model)].append(cell)
    return dict(found)


def analyse(cells: Sequence[Cell], column: Column, model: str, arms: Sequence[str], reference: Optional[str] = None,
            targets: Optional[Mapping[str, str]] = None, test: Optional[Test] = None,
            resamples: int = stats.RESAMPLES, boot: Optional[Resampling] = None) -> Analysis:
    """Every arm on one column (and model), and each against the reference when one is named; `boot`:
    the resampling every analysis of a report shares (moot.metrics.coded.Resampling)."""
    boot = boot or Resampling(resamples, stats.SEED)
    grouped = group(cells)
    of = {arm: grouped.get((arm, column.dataset, model), []) for arm in arms}
    _prefill(boot, [of[a] for a in arms if of[a]], targets, column.target)
    found = [arm_stat(of[a], column, targets, resamples, boot) for a in arms if of[a]]
    stats_ = tuple(s for s in found if s is not None)
    comparisons: list[Comparison] = []
    if reference is not None and of.get(reference):
        for arm in arms:
            if arm != reference and of[arm]:
                done = compare(of[arm], of[reference], column, targets, resamples, boot)
                if done is not None:
                    comparisons.append(done)
    chosen = test if test is not None and suited(test, column.metric) else None  # a report of an older experiment
    return Analysis(column, model, stats_, with_holm(comparisons, chosen))


METHODS = (
    "Mean over repeats with a 95% t interval (df = repeats - 1), clipped to the metric's range [0, 1] where it "
    f"reaches past it (flagged); [items]: 95% percentile bootstrap over items (B = {stats.RESAMPLES}, seed "
    f"{stats.SEED}), items resampled jointly across repeats. Flagged: fewer than {stats.FEW_REPEATS} repeats or "
    f"{stats.FEW_ITEMS} items; repeats that all give one value show '{stats.NO_VARIANCE}', and items whose "
    "every resample gives one value 'no variation across items', not a zero-width interval.",
    "Δ = arm − reference on the same items and seeds, 95% paired percentile bootstrap over items; p (its test "
    "in brackets), of the column's own metric: paired_t, the paired t-test over repeats (two or more that vary); "
    f"bootstrap, the paired bootstrap test over items (same draws as Δ's interval: B = {stats.RESAMPLES}, seed "
    f"{stats.SEED}; p = 2 (1 + draws past zero) / (B + 1)) when the repeats cannot speak; wilcoxon or mcnemar "
    "(accuracy only) when the experiment names them; Holm's adjustment over the arms compared with the reference.",
    "Seed sd: sd of the metric over repeats; item se: mean bootstrap standard error within a run. MDE: the Δ a "
    "paired t-test over the repeats detects with 80% power at alpha 0.05 (one repeat, or repeats without "
    "variance: from the paired bootstrap's standard error, normal approximation).",
)
