"""Agreement between raters (people, models) on the same units: Cohen's kappa for closed answers
(verdicts, labels), Krippendorff's alpha (interval) and Spearman's rho for 1-10 scores.

tests/test_agreement.py checks each against its reference implementation on the same ratings:
scikit-learn's `cohen_kappa_score`, the `krippendorff` package's `alpha(level_of_measurement=
"interval")`, scipy's `spearmanr` (rho is computed from scipy's ranks, vectorized over resamples). Each comes with n (the units both
raters, or at least two raters, rated) and a 95 % percentile bootstrap interval over units
(resampled with moot.metrics.stats' fixed seed, so a report is the same every time it is made).
A missing rating (an unparsed model answer) leaves that unit out of a pair's statistic.
"""

from __future__ import annotations

import math
import warnings
from typing import Callable, Optional, Sequence, Union

import numpy as np

from moot.metrics.stats import CONFIDENCE, RESAMPLES, SEED, Interval

Labels = Sequence[Optional[str]]  # one rater's answers per unit (None: missing)
Scores = Sequence[Optional[float]]
Columns = np.ndarray  # raters x units: category codes (-1: missing) or scores (NaN: missing)


def label_codes(*raters: Labels) -> Columns:
    """Raters' closed answers as category codes (-1: missing), one row per rater."""
    categories = sorted({v for r in raters for v in r if v is not None})
    index = {c: i for i, c in enumerate(categories)}
    return np.array([[-1 if v is None else index[v] for v in r] for r in raters], dtype=np.int64)


def score_values(*raters: Scores) -> Columns:
    """Raters' scores as floats (NaN: missing), one row per rater."""
    return np.array([[math.nan if v is None else float(v) for v in r] for r in raters], dtype=np.float64)


def cohen_kappa(a: Labels, b: Labels) -> float:
    """Cohen's kappa of two raters over the units both rated (NaN: chance agreement is total)."""
    return kappa_of(label_codes(a, b))


def kappa_of(codes: Columns) -> float:
    """`cohen_kappa` of two rows of category codes."""
    a, b = codes[0], codes[1]
    both = (a >= 0) & (b >= 0)
    a, b = a[both], b[both]
    if a.size == 0:
        return math.nan
    size = int(max(a.max(), b.max())) + 1
    observed = float(np.mean(a == b))
    expected = float(np.bincount(a, minlength=size) @ np.bincount(b, minlength=size)) / a.size ** 2
    return math.nan if expected == 1 else (observed - expected) / (1 - expected)


def krippendorff_interval(ratings: Sequence[Scores]) -> float:
    """Krippendorff's alpha for interval data: `ratings[r][u]` is rater r's score of unit u (None
    or NaN: not rated). Units rated by fewer than two raters do not count."""
    return alpha_of(score_values(*ratings))


def alpha_of(data: Columns) -> float:
    """`krippendorff_interval` of a raters x units array. Within a unit of m values, the sum of
    squared differences over ordered pairs is 2 (m S2 - S1^2) (S1, S2: the sum of the values and
    of their squares), so no pair is formed."""
    rated = ~np.isnan(data)
    m = rated.sum(axis=0)
    pairable = m >= 2
    values, m = np.where(rated, data, 0.0)[:, pairable], m[pairable]
    n = int(m.sum())
    if n < 2:
        return math.nan
    s1, s2 = values.sum(axis=0), (values ** 2).sum(axis=0)
    observed = float(np.sum(2 * (m * s2 - s1 ** 2) / (m - 1))) / n
    expected = 2 * (n * float(s2.sum()) - float(s1.sum()) ** 2) / (n * (n - 1))
    return math.nan if expected <= 1e-12 * max(1.0, float(s2.sum())) else 1 - observed / expected


def spearman(a: Scores, b: Scores) -> float:
    """Spearman's rho of two raters' scores over the units both rated (NaN: a constant rater)."""
    return float(rho_of(complete(score_values(a, b))))


def complete(data: Columns) -> Columns:
    """The units every rater scored."""
    return data[:, ~np.isnan(data).any(axis=0)]


def rho_of(data: np.ndarray) -> np.ndarray:
    """Spearman's rho of two rows of complete scores (`data[..., 2, units]`, vectorized over
    leading axes): Pearson's r of their average ranks (scipy's rankdata), as scipy's spearmanr
    defines it; NaN where a rater is constant or fewer than two units."""
    from scipy import stats  # loaded when needed, not with the kit, which imports this module
    if data.shape[-1] < 2:
        return np.full(data.shape[:-2], math.nan)
    ranks = stats.rankdata(data, axis=-1)
    centred = ranks - ranks.mean(axis=-1, keepdims=True)
    x, y = centred[..., 0, :], centred[..., 1, :]
    scale = np.sqrt((x * x).sum(axis=-1) * (y * y).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale > 0, (x * y).sum(axis=-1) / np.where(scale > 0, scale, 1), math.nan)


def paired_n(data: Columns) -> int:
    """Units every row of `data` rated."""
    missing = data < 0 if data.dtype.kind == "i" else np.isnan(data)
    return int((~missing.any(axis=0)).sum())


def with_interval(statistic: Callable[[Columns], Union[float, np.ndarray]], data: Columns, n: int, resamples: int = RESAMPLES,
                  seed: int = SEED, confidence: float = CONFIDENCE, vectorized: bool = False) -> Interval:
    """`statistic(data)` (raters x units) with a percentile bootstrap interval over units (units
    resampled, every rater's answers with them; `vectorized`: the statistic takes every resample
    at once, resamples x raters x units). Resamples where the statistic is undefined (e.g. one
    category only) are left out, and their share is noted."""
    estimate = float(statistic(data))
    method = f"{confidence:.0%} percentile bootstrap over units (B = {resamples}, seed {seed})"
    units = data.shape[1]
    if units < 2 or math.isnan(estimate):
        return Interval(estimate, math.nan, math.nan, n, method, "too few units for an interval" if units < 2 else
                        "undefined on these ratings")
    picks = np.random.default_rng(seed).integers(0, units, (resamples, units))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        draws = np.asarray(statistic(data[:, picks].transpose(1, 0, 2))) if vectorized else \
            np.array([statistic(data[:, pick]) for pick in picks])
    values = draws[~np.isnan(draws)]
    note = f"{resamples - values.size} of {resamples} resamples undefined" if values.size < resamples else ""
    if values.size == 0:
        return Interval(estimate, math.nan, math.nan, n, method, note)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(values, [alpha, 1 - alpha])
    return Interval(estimate, float(low), float(high), n, method, note)
