"""Classification metrics as sums of per-item features, so a bootstrap resamples them fast.

Every metric moot reports (accuracy, macro precision / recall / F1, F_avg, RF1, NF1, one class's
F1) is a function of per-class counts: true positives, predictions and gold support. Each item
contributes a row of 0/1 features (`features`); a run's counts are the column sums, and a
bootstrap resample's counts are the resample's weights (how often each item was drawn) times the
feature matrix: one matrix product for thousands of resamples. `resampled` builds that statistic
over item indices, so scipy's bootstrap (moot.metrics.stats) draws the indices and every draw is
scipy's own. An unparsed prediction (None, "unparsed", any string outside the labels) matches no
class. Each metric equals moot.metrics.classification to 1e-12 (tests/test_stats.py).
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterator, Optional, Sequence

import numpy as np
from numpy.typing import NDArray

from moot.metrics.classification import class_for

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]

# metric names beyond moot.metrics.classification.METRICS that tables of the papers print
EXTRA = ("macro_precision", "macro_recall")


def features(gold: Sequence[str], pred: Sequence[Optional[str]], labels: Sequence[str]) -> Floats:
    """Items x (1 + 3K): [correct, then per class: true positive, predicted, gold]."""
    k = len(labels)
    index = {label: i for i, label in enumerate(labels)}
    g = np.fromiter((index[x] for x in gold), dtype=np.int64, count=len(gold))
    p = np.fromiter((index.get(x or "", k) for x in pred), dtype=np.int64, count=len(pred))
    rows = np.arange(len(gold))
    out = np.zeros((len(gold), 1 + 3 * k))
    out[:, 0] = g == p
    hit = g == p
    out[rows[hit], 1 + 3 * g[hit]] = 1.0
    known = p < k
    out[rows[known], 2 + 3 * p[known]] = 1.0
    out[rows, 3 + 3 * g] = 1.0
    return out


def classes_of(metric: str, labels: Sequence[str], favor: str = "favor", against: str = "against") -> list[int]:
    """The classes whose F1 (or precision, recall) a metric averages."""
    names = list(labels)
    if metric in ("macro_f1", "macro_precision", "macro_recall"):
        return list(range(len(names)))
    if metric == "f_avg":
        return [names.index(favor), names.index(against)]
    if metric.startswith("f1:") and metric[3:] in names:
        return [names.index(metric[3:])]
    found = class_for(metric, names)
    if found is None:
        raise ValueError(f"metric {metric!r} is not defined on labels {names}")
    return [names.index(found)]


def _ratio(num: Floats, den: Floats) -> Floats:
    return np.asarray(np.divide(num, den, out=np.zeros(np.shape(den)), where=den > 0), dtype=np.float64)


def score(counts: Floats, metric: str, labels: Sequence[str]) -> Floats:
    """The metric from counts (..., 1 + 3K): weighted sums of `features` rows."""
    c = np.asarray(counts, dtype=np.float64)
    if metric == "accuracy":
        total = c[..., 3::3].sum(axis=-1)
        return _ratio(c[..., 0], total)
    parts = []
    for i in classes_of(metric, labels):
        tp, predicted, gold = c[..., 1 + 3 * i], c[..., 2 + 3 * i], c[..., 3 + 3 * i]
        if metric == "macro_precision":
            parts.append(_ratio(tp, predicted))
        elif metric == "macro_recall":
            parts.append(_ratio(tp, gold))
        else:
            parts.append(_ratio(2 * tp, predicted + gold))
    return np.asarray(sum(parts) / len(parts), dtype=np.float64)


def weights(indices: Ints, n: int) -> Floats:
    """How often each of n items occurs in each resample: indices (..., m) -> counts (..., n)."""
    idx = np.asarray(indices, dtype=np.int64)
    flat = idx.reshape(-1, idx.shape[-1])
    offsets = (np.arange(flat.shape[0]) * n)[:, None]
    counted = np.bincount((flat + offsets).ravel(), minlength=flat.shape[0] * n)
    return np.asarray(counted.reshape(*idx.shape[:-1], n), dtype=np.float64)


def resampled(runs: Sequence[Floats], metric: str, labels: Sequence[str]) -> Callable[..., Floats]:
    """A vectorized statistic of item indices: the metric averaged over `runs` (one feature matrix
    per repeat, rows = the same items in the same order), on the items the indices draw."""
    n = runs[0].shape[0]

    def statistic(indices: Ints, axis: int = -1) -> Floats:
        w = weights(indices, n)
        return np.asarray(sum(score(w @ f, metric, labels) for f in runs) / len(runs), dtype=np.float64)
    return statistic


def value(run: Floats, metric: str, labels: Sequence[str]) -> float:
    """The metric of one run's feature matrix."""
    return float(score(run.sum(axis=0), metric, labels))


class Resampling:
    """One percentile bootstrap shared by every statistic of a report: for n items, the weights of
    `resamples` draws of n item indices, drawn exactly as scipy's `bootstrap` draws them (a
    Generator seeded with `seed`, `integers(0, n, (resamples, n))`), so every interval equals
    scipy's (tests/test_stats.py); the counts of a feature matrix under them are kept by key,
    so two metrics of one run cost one product. `keep_weights=False` (a server computing one run's
    interval at a time) draws the same weights `batch` resamples at a time for each product instead
    of keeping them (resamples x n floats: 80 MB for 10,000 items), so memory stays flat."""

    def __init__(self, resamples: int, seed: int, batch: int = 250, keep_weights: bool = True):
        self.resamples, self.seed, self.batch, self.keep_weights = resamples, seed, batch, keep_weights
        self._weights: dict[int, NDArray[np.float32]] = {}
        self._counts: dict[Hashable, Floats] = {}

    def blocks(self, n: int) -> Iterator[NDArray[np.float32]]:
        """The weights `batch` resamples at a time (the same draws whatever the batch)."""
        rng = np.random.default_rng(self.seed)
        for start in range(0, self.resamples, self.batch):
            rows = min(self.batch, self.resamples - start)
            yield weights(rng.integers(0, n, (rows, n)), n).astype(np.float32)

    def weights(self, n: int) -> NDArray[np.float32]:
        """Resamples x n: how often each item was drawn (float32: integer counts, exact)."""
        if n not in self._weights:
            out = np.empty((self.resamples, n), dtype=np.float32)
            for start, block in zip(range(0, self.resamples, self.batch), self.blocks(n)):
                out[start:start + block.shape[0]] = block
            if len(self._weights) > 8:
                self._weights.clear()
            self._weights[n] = out
        return self._weights[n]

    def prefill(self, runs: Sequence[tuple[Hashable, Floats]]) -> None:
        """Keep the counts of these runs (all on the same n items) from one product with the weights:
        one wide matrix product is several times faster than a narrow one per run."""
        missing = [(key, run) for key, run in runs if key not in self._counts]
        if len(missing) < 2 or not self.keep_weights:
            return
        widths = [run.shape[1] for _, run in missing]
        found = self.weights(missing[0][1].shape[0]) @ np.hstack([run for _, run in missing]).astype(np.float32)
        for (key, _), start, width in zip(missing, np.cumsum([0, *widths[:-1]]), widths):
            self._counts[key] = np.asarray(found[:, start:start + width], dtype=np.float64)

    def counts(self, key: Hashable, run: Floats) -> Floats:
        """Resamples x features: the run's counts in each resample (kept under `key`)."""
        if key not in self._counts:
            features = run.astype(np.float32)
            found = self.weights(run.shape[0]) @ features if self.keep_weights else \
                np.concatenate([block @ features for block in self.blocks(run.shape[0])])
            self._counts[key] = np.asarray(found, dtype=np.float64)
        return self._counts[key]
