"""Classification metrics as vectorized statistics of coded items, for bootstrap resampling.

One item is one integer: gold index * (K + 1) + predicted index, where K is the number of labels
and index K is "unparsed" (any prediction outside the labels). A metric is then a function of the
codes along the last axis, so scipy's bootstrap resamples thousands of runs at once. Each metric
equals its definition in moot.metrics.classification (tests check it to 1e-12).
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np
from numpy.typing import NDArray

from moot.metrics.classification import class_for

Codes = NDArray[np.int64]
Floats = NDArray[np.float64]


def encode(gold: Sequence[str], pred: Sequence[Optional[str]], labels: Sequence[str]) -> Codes:
    """Each item's code (module docstring); gold must be one of `labels`."""
    index = {label: i for i, label in enumerate(labels)}
    k = len(labels)
    return np.fromiter((index[g] * (k + 1) + index.get(p or "", k) for g, p in zip(gold, pred)),
                       dtype=np.int64, count=len(gold))


def _f1(codes: NDArray[np.float64] | Codes, k: int, label: int) -> Floats:
    """F1 of one class along the last axis: 2 TP / (predicted + support), 0 when both are 0."""
    gold = codes // (k + 1)
    pred = codes % (k + 1)
    tp = np.sum((gold == label) & (pred == label), axis=-1)
    both = np.sum(pred == label, axis=-1) + np.sum(gold == label, axis=-1)
    return np.asarray(np.divide(2.0 * tp, both, out=np.zeros(np.shape(both)), where=both > 0), dtype=np.float64)


def statistic(metric: str, labels: Sequence[str], favor: str = "favor",
              against: str = "against") -> Callable[..., Floats]:
    """The vectorized statistic of `metric` (accuracy, macro_f1, f_avg, rf1, nf1) over codes."""
    k = len(labels)
    if metric == "accuracy":
        def accuracy(codes: Codes, axis: int = -1) -> Floats:
            c = np.asarray(codes).astype(np.int64)
            return np.asarray(np.mean(c // (k + 1) == c % (k + 1), axis=-1), dtype=np.float64)
        return accuracy
    if metric == "macro_f1":
        classes = list(range(k))
    elif metric == "f_avg":
        classes = [list(labels).index(favor), list(labels).index(against)]
    else:
        found = class_for(metric, labels)
        if found is None:
            raise ValueError(f"metric {metric!r} is not defined on labels {list(labels)}")
        classes = [list(labels).index(found)]

    def mean_f1(codes: Codes, axis: int = -1) -> Floats:
        c = np.asarray(codes).astype(np.int64)
        return np.asarray(sum(_f1(c, k, i) for i in classes) / len(classes), dtype=np.float64)
    return mean_f1


def correct(codes: Codes, k: int) -> Floats:
    """1.0 for an item predicted right, 0.0 otherwise (unparsed is wrong)."""
    return np.asarray(codes // (k + 1) == codes % (k + 1), dtype=np.float64)
