"""Classification metrics for stance, rumor and sentiment evaluation (pure Python).

Gold labels and predictions are sequences of strings. A prediction that is
``None`` or :data:`UNPARSED` (the model reply could not be mapped onto the label
set) is always wrong: it never equals gold, it is a false negative for the gold
class and a false positive for no class. Per-class and macro metrics follow
scikit-learn's ``precision_recall_fscore_support`` with ``zero_division=0``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Optional

UNPARSED = "unparsed"

Pred = str | None
PRF = tuple[float, float, float, int]  # precision, recall, f1, support


def _is_unparsed(p: Pred) -> bool:
    return p is None or p == UNPARSED


def _check(gold: Sequence[str], pred: Sequence[Pred]) -> None:
    if len(gold) == 0:
        raise ValueError("metrics need at least one item, got empty input")
    if len(gold) != len(pred):
        raise ValueError(f"gold and pred differ in length: {len(gold)} != {len(pred)}")
    if any(_is_unparsed(g) for g in gold):
        raise ValueError(f"gold labels must not be None or {UNPARSED!r}")


def _check_labels(gold: Sequence[str], labels: Sequence[str]) -> None:
    if len(labels) == 0:
        raise ValueError("labels must not be empty")
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels contain duplicates: {list(labels)}")
    if any(_is_unparsed(lab) for lab in labels):
        raise ValueError(f"labels must not contain None or {UNPARSED!r}")
    unknown = sorted(set(gold) - set(labels))
    if unknown:
        raise ValueError(f"gold labels not in labels {list(labels)}: {unknown}")


def _div(num: float, den: float) -> float:
    return num / den if den else 0.0


def _class_prf(gold: Sequence[str], pred: Sequence[Pred], label: str) -> PRF:
    """P/R/F1/support of one class; unparsed predictions never match ``label``."""
    tp = sum(1 for g, p in zip(gold, pred) if g == label and p == label)
    n_pred = sum(1 for p in pred if p == label)
    support = sum(1 for g in gold if g == label)
    # F1 = 2TP / (2TP + FP + FN), the form sklearn (>=1.3) uses; 0.0 when undefined.
    return _div(tp, n_pred), _div(tp, support), _div(2 * tp, n_pred + support), support


def accuracy(gold: Sequence[str], pred: Sequence[Pred]) -> float:
    """Fraction of exact matches (sklearn ``accuracy_score``); unparsed counts as wrong."""
    _check(gold, pred)
    hits = sum(1 for g, p in zip(gold, pred) if not _is_unparsed(p) and g == p)
    return hits / len(gold)


def precision_recall_f1(
    gold: Sequence[str], pred: Sequence[Pred], labels: Sequence[str]
) -> dict[str, PRF]:
    """Per-class ``{label: (precision, recall, f1, support)}``.

    Same as sklearn ``precision_recall_fscore_support(labels=labels, average=None,
    zero_division=0)``: a class never predicted has precision 0.0.
    """
    _check(gold, pred)
    _check_labels(gold, labels)
    return {lab: _class_prf(gold, pred, lab) for lab in labels}


def macro_prf(
    gold: Sequence[str], pred: Sequence[Pred], labels: Sequence[str]
) -> tuple[float, float, float]:
    """Unweighted mean of per-class P, R and F1 over ``labels``.

    Same as sklearn ``precision_recall_fscore_support(labels=labels,
    average='macro', zero_division=0)`` (macro F1 is the mean of per-class F1).
    """
    per_class = precision_recall_f1(gold, pred, labels).values()
    k = len(labels)
    return (
        sum(v[0] for v in per_class) / k,
        sum(v[1] for v in per_class) / k,
        sum(v[2] for v in per_class) / k,
    )


def f_avg(
    gold: Sequence[str],
    pred: Sequence[Pred],
    favor: str = "favor",
    against: str = "against",
) -> float:
    """SemEval-2016 Task 6 official score: F_avg = (F1(FAVOR) + F1(AGAINST)) / 2.

    Computed over all items (Mohammad et al., 2016): gold or predicted NONE/neutral
    items still produce FAVOR/AGAINST false negatives/positives. Equals sklearn
    ``f1_score(labels=[favor, against], average='macro', zero_division=0)``.
    """
    _check(gold, pred)
    return (_class_prf(gold, pred, favor)[2] + _class_prf(gold, pred, against)[2]) / 2


def rumor_f1(
    gold: Sequence[str],
    pred: Sequence[Pred],
    rumor: str = "rumor",
    non_rumor: str = "non-rumor",
) -> tuple[float, float]:
    """Return ``(RF1, NF1)``: F1 of the rumor class and F1 of the non-rumor class.

    Binary rumor-detection metrics as reported by S2MAD (Zhang et al., 2024,
    "Breaking Event Rumor Detection via Stance-Separated Multi-Agent Debate").
    Each equals sklearn ``f1_score(pos_label=...)`` for that class.
    """
    per_class = precision_recall_f1(gold, pred, [rumor, non_rumor])
    return per_class[rumor][2], per_class[non_rumor][2]


def confusion_matrix(
    gold: Sequence[str], pred: Sequence[Pred], labels: Sequence[str]
) -> dict[str, dict[str, int]]:
    """``{gold_label: {pred_label: count, ..., "unparsed": count}}``.

    Rows and columns follow sklearn ``confusion_matrix(labels=...)`` (row = gold,
    column = prediction). The extra :data:`UNPARSED` column counts predictions
    that are ``None``, ``"unparsed"`` or any string outside ``labels``.
    """
    _check(gold, pred)
    _check_labels(gold, labels)
    known = set(labels)
    matrix = {g: {**{p: 0 for p in labels}, UNPARSED: 0} for g in labels}
    for g, p in zip(gold, pred):
        matrix[g][p if p in known else UNPARSED] += 1
    return matrix


@dataclass(frozen=True)
class MetricReport:
    """Summary of one evaluation run, as printed in reports.

    ``n_unparsed`` counts predictions outside ``labels`` (``None``, ``"unparsed"``
    or a stray string), i.e. the confusion matrix's :data:`UNPARSED` column.
    """

    n: int
    n_unparsed: int
    accuracy: float
    macro_precision: float
    macro_recall: float
    macro_f1: float
    per_class_f1: dict[str, float]
    f_avg: float | None
    confusion: dict[str, dict[str, int]]
    metric: str
    score: float

    def format(self) -> str:
        """Readable multi-line text; the headline ``metric`` comes first."""
        lines = [
            f"{self.metric}={self.score:.4f}  n={self.n}  unparsed={self.n_unparsed}",
            f"accuracy={self.accuracy:.4f}  macro P/R/F1="
            f"{self.macro_precision:.4f}/{self.macro_recall:.4f}/{self.macro_f1:.4f}",
        ]
        if self.f_avg is not None:
            lines.append(f"f_avg={self.f_avg:.4f}")
        lines += [f"  F1[{lab}]={f1:.4f}" for lab, f1 in self.per_class_f1.items()]
        cols = list(next(iter(self.confusion.values())))
        lines.append("confusion (rows=gold): " + " ".join(cols))
        lines += [f"  {g}: " + " ".join(str(row[c]) for c in cols)
                  for g, row in self.confusion.items()]
        return "\n".join(lines)


METRICS = ("accuracy", "macro_f1", "f_avg", "rf1", "nf1")
RUMOR_CLASSES = {"rf1": ("fake", "rumor", "false"), "nf1": ("real", "non-rumor", "true")}


def class_for(metric: str, labels: Sequence[str]) -> Optional[str]:
    """The class whose F1 is RF1 (the rumor class) or NF1 (the non-rumor class), if labelled."""
    return next((lab for lab in RUMOR_CLASSES.get(metric, ()) if lab in labels), None)


def defined(metric: str, labels: Sequence[str], favor: str = "favor", against: str = "against") -> bool:
    """Whether `metric` can be computed on a run with these labels: F_avg needs favor and
    against, RF1 / NF1 a rumour / non-rumour class (:data:`RUMOR_CLASSES`)."""
    if metric == "f_avg":
        return {favor, against} <= set(labels)
    if metric in RUMOR_CLASSES:
        return class_for(metric, labels) is not None
    return metric in METRICS


def value_of(report: MetricReport, metric: str, labels: Sequence[str]) -> float:
    """One metric of a summarized run by name (see :data:`METRICS`); it must be `defined`."""
    if metric == "accuracy":
        return report.accuracy
    if metric == "macro_f1":
        return report.macro_f1
    if metric == "f_avg":
        if report.f_avg is None:
            raise ValueError("metric 'f_avg' needs 'favor' and 'against' in labels")
        return report.f_avg
    found = class_for(metric, labels)
    if found is None:
        raise ValueError(f"metric {metric!r} needs one of {', '.join(RUMOR_CLASSES.get(metric, ()))} in labels")
    return report.per_class_f1[found]


def summarize(
    gold: Sequence[str],
    pred: Sequence[Pred],
    labels: Sequence[str],
    metric: str = "macro_f1",
    favor: str = "favor",
    against: str = "against",
) -> MetricReport:
    """Compute every metric above; ``metric`` picks the headline ``score``.

    ``metric`` is one of :data:`METRICS`. ``f_avg`` is filled in only when both
    ``favor`` and ``against`` are in ``labels`` (required for ``metric='f_avg'``).
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {METRICS}")
    per_class = precision_recall_f1(gold, pred, labels)
    mp, mr, mf = macro_prf(gold, pred, labels)
    fa = f_avg(gold, pred, favor, against) if {favor, against} <= set(labels) else None
    if metric == "f_avg" and fa is None:
        raise ValueError(f"metric 'f_avg' needs {favor!r} and {against!r} in labels")
    if metric in RUMOR_CLASSES and class_for(metric, labels) is None:
        raise ValueError(f"metric {metric!r} needs one of {', '.join(RUMOR_CLASSES[metric])} in labels")
    known = set(labels)
    report = MetricReport(
        n=len(gold),
        n_unparsed=sum(1 for p in pred if p not in known),
        accuracy=accuracy(gold, pred),
        macro_precision=mp,
        macro_recall=mr,
        macro_f1=mf,
        per_class_f1={lab: v[2] for lab, v in per_class.items()},
        f_avg=fa,
        confusion=confusion_matrix(gold, pred, labels),
        metric=metric,
        score=0.0,
    )
    return replace(report, score=value_of(report, metric, labels))
