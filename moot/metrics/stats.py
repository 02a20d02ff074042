"""Statistics of experiments: intervals over repeats and items, paired tests between arms.

Every function computes with scipy (the reference implementation); tests/test_stats.py checks each
against statsmodels (or an exact enumeration where statsmodels has no such test) to 1e-9. Each
result names its method, so a report can print it under the table.

- `t_interval`: mean over repeats with a Student-t confidence interval (n repeats, df n-1);
- `bootstrap_interval`: a statistic over one run's items with a percentile bootstrap interval;
- `paired_bootstrap`: the difference of a statistic between two arms on the same items,
  resampling items jointly (a paired bootstrap) for its interval;
- `mcnemar_exact`: the exact McNemar test of two arms' correctness on the same items (a two-sided
  binomial test on the discordant pairs, as statsmodels' `mcnemar(exact=True)`);
- `wilcoxon`: the Wilcoxon signed-rank test for paired scores (1-10 scores, conference measures);
- `paired_t`: the paired t-test over repeats (COLA's Table 2 marks);
- `holm`: Holm's step-down adjustment when several arms are compared with one reference;
- `mde_paired`: the minimum detectable difference at 80 % power for a paired t-test with n pairs;
- `spread`: the seed (between-repeat) spread of a metric apart from its item (within-run) one.

- `bootstrap_test`: the two-sided p of a paired bootstrap distribution of a Δ (the table's own
  metric resampled over items): twice the smaller share of draws on either side of zero.

scipy is imported by the functions that compute with it, not with this module: reading a saved run
(moot.saved.run) and reporting a single run need numpy only, and importing scipy adds about 180 MB
of address space to every command that imports the kit (`moot report --help`: 383 MB, 199 MB without).

Degenerate inputs (one repeat, no discordant pair, every difference zero) give NaN or p = 1 with
the reason in `note`, never a warning on stderr; repeats that do not vary give no interval but
`NO_VARIANCE`, never a zero-width one. An interval over fewer than `FEW_REPEATS` repeats or
`FEW_ITEMS` items carries a flag saying so, and a t interval given `bounds` (a metric's range) is
clipped to them with a flag: the interval a table prints says when it cannot be trusted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Optional, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

Floats = NDArray[np.float64]
Statistic = Callable[..., Floats]  # vectorized: sample arrays (..., n) -> values (...)
CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 20240229  # the bootstrap's fixed seed: a report is the same every time it is made
NO_VARIANCE = "no variance across repeats"
FEW_REPEATS = 3  # under it a t interval has df 1 (t = 12.7): flagged as too few repeats
FEW_ITEMS = 30  # under it a percentile bootstrap's interval is too narrow: flagged as too few items
TINY = 1e-12  # a spread below it is a floating residue of identical values, not variation


@dataclass(frozen=True)
class Interval:
    """An estimate with its confidence interval; `n` is what it is over (repeats, or items)."""

    estimate: float
    low: float
    high: float
    n: int
    method: str
    note: str = ""  # why there is no interval (low and high NaN), or a degenerate one
    flags: tuple[str, ...] = ()  # what a table prints beside it: too few repeats or items, clipped

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def few(n: int, over: str) -> tuple[str, ...]:
    """The flag of an interval over `n` repeats or items when they are too few (`FEW_*`)."""
    least = FEW_REPEATS if over == "repeats" else FEW_ITEMS
    return (f"{n} {over}: too few",) if n < least else ()


@dataclass(frozen=True)
class Test:
    """A test's statistic and two-sided p-value, over `n` pairs (NaN: undefined, see `note`)."""

    statistic: float
    pvalue: float
    n: int
    method: str
    note: str = ""


def _floats(values: ArrayLike) -> Floats:
    return np.asarray(values, dtype=np.float64)


def t_interval(values: ArrayLike, confidence: float = CONFIDENCE,
               bounds: Optional[tuple[float, float]] = None) -> Interval:
    """The mean of `values` (one per repeat) with its Student-t interval (df = n - 1), clipped to
    `bounds` (the metric's range) with a flag when it reaches past them."""
    from scipy import stats
    x = _floats(values)
    n = int(x.size)
    method = f"mean over repeats, {confidence:.0%} t interval (df = n - 1)"
    if n == 0:
        raise ValueError("an interval needs at least one value")
    mean = float(x.mean())
    if n == 1:
        return Interval(mean, math.nan, math.nan, 1, method, "one repeat: no interval")
    sem = float(stats.sem(x))
    if not sem > TINY * max(1.0, abs(mean)):
        return Interval(mean, math.nan, math.nan, n, method, NO_VARIANCE)
    below, above = _t_quantiles(confidence, n - 1)  # scipy's t.interval: loc + quantile * scale
    low, high = float(mean + below * sem), float(mean + above * sem)
    flags = few(n, "repeats")
    if bounds is not None and (low < bounds[0] or high > bounds[1]):
        low, high = max(low, bounds[0]), min(high, bounds[1])
        flags += (f"clipped to [{bounds[0]:g}, {bounds[1]:g}]",)
    return Interval(mean, low, high, n, method, flags=flags)


@lru_cache(maxsize=256)
def _t_quantiles(confidence: float, df: int) -> tuple[float, float]:
    """The standard t interval's ends for `df`, kept: a report asks for the same few df many times."""
    from scipy import stats
    low, high = stats.t.interval(confidence, df)
    return float(low), float(high)


def _bootstrap(data: tuple[Floats, ...], statistic: Statistic, paired: bool, resamples: int, seed: int,
               confidence: float) -> tuple[float, float, float]:
    """scipy's percentile bootstrap; (standard error, low, high)."""
    from scipy import stats
    result = stats.bootstrap(data, statistic, n_resamples=resamples, paired=paired, vectorized=True,
                             axis=-1, confidence_level=confidence, method="percentile",
                             rng=np.random.default_rng(seed), batch=max(1, min(resamples, 2_000_000 // max(1, data[0].size))))
    interval = result.confidence_interval
    return float(result.standard_error), float(interval.low), float(interval.high)


def bootstrap_interval(sample: ArrayLike, statistic: Statistic, resamples: int = RESAMPLES, seed: int = SEED,
                       confidence: float = CONFIDENCE) -> Interval:
    """`statistic` over one run's items with a percentile bootstrap interval (items resampled)."""
    x = _floats(sample)
    estimate = float(statistic(x))
    method = f"{confidence:.0%} percentile bootstrap over items (B = {resamples}, seed {seed})"
    if x.size < 2 or np.all(x == x[0]):
        return Interval(estimate, estimate, estimate, int(x.size), method, "no variation across items")
    _, low, high = _bootstrap((x,), statistic, False, resamples, seed, confidence)
    return Interval(estimate, low, high, int(x.size), method)


def percentile_interval(estimate: float, distribution: ArrayLike, n: int, resamples: int = RESAMPLES,
                        seed: int = SEED, confidence: float = CONFIDENCE, paired: bool = False) -> Interval:
    """The percentile interval of a bootstrap distribution computed elsewhere (with scipy's draws:
    moot.metrics.coded.Resampling), as scipy's `bootstrap(method='percentile')` computes it."""
    dist = _floats(distribution)
    kind = "paired percentile bootstrap" if paired else "percentile bootstrap"
    method = f"{confidence:.0%} {kind} over items (B = {resamples}, seed {seed})"
    if n < 2 or np.all(dist == dist[0]):
        return Interval(estimate, estimate, estimate, n, method, "no variation across items", few(n, "items"))
    alpha = (1 - confidence) / 2
    low, high = np.quantile(dist, [alpha, 1 - alpha])
    return Interval(estimate, float(low), float(high), n, method, flags=few(n, "items"))


def bootstrap_test(distribution: ArrayLike, n: int, resamples: int = RESAMPLES, seed: int = SEED) -> Test:
    """The two-sided p of Δ = 0 from a paired bootstrap distribution of Δ (the percentile interval's
    test: p < 1 - confidence exactly when that interval leaves out zero, up to the quantile's
    interpolation): 2 * (1 + the draws on the smaller side of zero, zero counted on both) / (B + 1).
    A draw within TINY of zero is zero (two equal metrics computed in two orders differ by 1e-17)."""
    dist = _floats(distribution)
    dist = np.where(np.abs(dist) <= TINY, 0.0, dist)
    method = f"paired bootstrap test over items (B = {resamples}, seed {seed})"
    if n < 2:
        return Test(math.nan, math.nan, n, method, "needs two items or more")
    side = int(min(np.sum(dist <= 0), np.sum(dist >= 0)))
    return Test(float(side), min(1.0, 2 * (1 + side) / (dist.size + 1)), n, method,
                f"{side} of {dist.size} draws past zero")


def standard_error(distribution: ArrayLike) -> float:
    """A bootstrap distribution's standard error (ddof 1, as scipy's)."""
    dist = _floats(distribution)
    return float(np.std(dist, ddof=1)) if dist.size > 1 else 0.0


def bootstrap_error(sample: ArrayLike, statistic: Statistic, resamples: int = RESAMPLES,
                    seed: int = SEED) -> float:
    """The bootstrap standard error of `statistic` over one run's items (0: no variation)."""
    x = _floats(sample)
    if x.size < 2 or np.all(x == x[0]):
        return 0.0
    return _bootstrap((x,), statistic, False, resamples, seed, CONFIDENCE)[0]


def paired_bootstrap(a: ArrayLike, b: ArrayLike, statistic: Statistic, resamples: int = RESAMPLES,
                     seed: int = SEED, confidence: float = CONFIDENCE) -> Interval:
    """Δ = statistic(a) - statistic(b) over the same items (a[i] and b[i] are one item), with a
    paired percentile bootstrap interval: items are resampled jointly."""
    x, y = _floats(a), _floats(b)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.size} != {y.size}")

    def delta(u: Floats, v: Floats, axis: int = -1) -> Floats:
        return np.asarray(statistic(u) - statistic(v), dtype=np.float64)

    estimate = float(delta(x, y))
    method = f"{confidence:.0%} paired percentile bootstrap over items (B = {resamples}, seed {seed})"
    if x.size < 2 or (np.all(x == x[0]) and np.all(y == y[0])):
        return Interval(estimate, estimate, estimate, int(x.size), method, "no variation across items")
    _, low, high = _bootstrap((x, y), delta, True, resamples, seed, confidence)
    return Interval(estimate, low, high, int(x.size), method)


def mcnemar_exact(a_correct: ArrayLike, b_correct: ArrayLike) -> Test:
    """Exact McNemar test: a two-sided binomial test (p = 1/2) on the discordant pairs; the
    statistic is the smaller discordant count (statsmodels `mcnemar(table, exact=True)`)."""
    from scipy import stats
    x, y = _floats(a_correct).astype(bool), _floats(b_correct).astype(bool)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.size} != {y.size}")
    only_a, only_b = int(np.sum(x & ~y)), int(np.sum(~x & y))
    discordant = only_a + only_b
    method = "exact McNemar test (two-sided binomial on discordant pairs)"
    if discordant == 0:
        return Test(0.0, 1.0, int(x.size), method, "no discordant pair")
    pvalue = float(stats.binomtest(min(only_a, only_b), discordant, 0.5).pvalue)
    return Test(float(min(only_a, only_b)), pvalue, int(x.size), method, f"{only_a} vs {only_b} discordant")


def wilcoxon(a: ArrayLike, b: ArrayLike) -> Test:
    """Wilcoxon signed-rank test on paired scores; zero differences dropped (Wilcox), exact
    distribution for up to 50 pairs without ties, else the normal approximation (scipy's 'auto')."""
    from scipy import stats
    d = _floats(a) - _floats(b)
    method = "Wilcoxon signed-rank test (zero differences dropped)"
    if not np.any(d != 0):
        return Test(math.nan, 1.0, int(d.size), method, "every difference is zero")
    result = stats.wilcoxon(d, zero_method="wilcox", method="auto")
    return Test(float(result.statistic), float(result.pvalue), int(d.size), method)


def paired_t(a: ArrayLike, b: ArrayLike) -> Test:
    """Paired t-test of a against b (one value per repeat each, same seeds), two-sided."""
    from scipy import stats
    x, y = _floats(a), _floats(b)
    d = x - y
    method = "paired t-test over repeats (two-sided)"
    if d.size < 2:
        return Test(math.nan, math.nan, int(d.size), method, "needs two repeats or more")
    if not np.std(d) > TINY * max(1.0, float(np.max(np.abs(d)))):
        return Test(math.nan, math.nan, int(d.size), method, NO_VARIANCE)
    result = stats.ttest_rel(x, y)
    return Test(float(result.statistic), float(result.pvalue), int(d.size), method)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (statsmodels `multipletests(method='holm')`); NaN stays NaN
    and counts in no family."""
    p = np.asarray(pvalues, dtype=np.float64)
    known = np.flatnonzero(~np.isnan(p))
    adjusted = np.full(p.shape, math.nan)
    m = known.size
    order = known[np.argsort(p[known], kind="stable")]
    steps = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(steps)
    return [float(v) for v in adjusted]


def t_power(effect: float, n: int, alpha: float = 0.05) -> float:
    """Power of a two-sided one-sample (paired) t-test with n pairs at standardized effect d."""
    from scipy import stats
    df = n - 1
    critical = stats.t.isf(alpha / 2, df)
    shift = effect * math.sqrt(n)
    far = float(stats.nct.cdf(-critical, df, shift))  # the other tail; scipy gives NaN where it is ~0
    return float(stats.nct.sf(critical, df, shift)) + (0.0 if math.isnan(far) else far)


def mde_paired(sd_difference: float, n: int, alpha: float = 0.05, power: float = 0.8) -> Interval:
    """The smallest mean difference a paired t-test over n pairs detects with `power` at `alpha`:
    the standardized effect solving `t_power = power` times the sd of the differences."""
    method = f"minimum detectable effect, paired t-test, power {power:.0%}, alpha {alpha}"
    if n < 2 or not sd_difference > TINY:  # a floating residue of equal differences (6e-17) is none
        return Interval(math.nan, math.nan, math.nan, n, method, "needs two pairs or more and varying differences")
    value = detectable_effect(n, alpha, power) * sd_difference
    return Interval(value, value, value, n, method)


@lru_cache(maxsize=256)
def detectable_effect(n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The standardized effect a paired t-test over n pairs detects with `power` at `alpha` (it
    depends on n alone, so a report solves it once per n)."""
    from scipy import optimize
    high = 1.0
    while t_power(high, n, alpha) < power:  # widen the bracket (a wide one makes nct overflow)
        high *= 2
    return float(optimize.brentq(lambda d: t_power(d, n, alpha) - power, 0.0, high, xtol=1e-14, rtol=1e-15))


def mde_normal(standard_error: float, n: int, alpha: float = 0.05, power: float = 0.8) -> Interval:
    """The smallest difference a two-sided z-test detects with `power` at `alpha`, given the standard
    error of the difference: the shift (in standard errors) whose power, both tails counted, is
    `power` (statsmodels NormalIndPower's equation), times the standard error."""
    from scipy import optimize, stats
    method = f"minimum detectable effect, normal approximation from the standard error, power {power:.0%}, alpha {alpha}"
    if not standard_error > TINY:
        return Interval(math.nan, math.nan, math.nan, n, method, "no variation")
    critical = float(stats.norm.isf(alpha / 2))

    def reached(shift: float) -> float:
        return float(stats.norm.sf(critical - shift) + stats.norm.cdf(-critical - shift)) - power

    shift = optimize.brentq(reached, 0.0, critical + 10.0, xtol=1e-14, rtol=1e-15)
    value = float(shift) * standard_error
    return Interval(value, value, value, n, method)


@dataclass(frozen=True)
class Spread:
    """How much a metric moves between repeats (seeds) and within one run (items)."""

    seed_sd: float  # sd over repeats of the run-level metric (ddof 1); NaN with one repeat
    item_se: float  # mean over repeats of the bootstrap standard error over items
    repeats: int


def spread(run_values: Sequence[float], item_errors: Sequence[float]) -> Spread:
    """Seed variance reported apart from item variance (see `Spread`)."""
    values = _floats(run_values)
    seed_sd = float(np.std(values, ddof=1)) if values.size > 1 else math.nan
    item_se = float(np.mean(_floats(item_errors))) if len(item_errors) else math.nan
    return Spread(seed_sd, item_se, int(values.size))


def sd_difference(a: ArrayLike, b: ArrayLike) -> float:
    """The sample sd (ddof 1) of paired differences a - b; NaN under two pairs."""
    d = _floats(a) - _floats(b)
    return float(np.std(d, ddof=1)) if d.size > 1 else math.nan


def mean(values: ArrayLike, axis: int = -1) -> Floats:
    """The vectorized mean (the statistic of accuracy over 0/1 correctness)."""
    return np.asarray(np.mean(_floats(values), axis=axis), dtype=np.float64)


def significant(pvalue: Optional[float], alpha: float = 0.05) -> bool:
    return pvalue is not None and not math.isnan(pvalue) and pvalue < alpha
