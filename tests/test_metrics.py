"""Tests for moot.metrics.classification, checked against scikit-learn (test-only dependency)."""

from __future__ import annotations

import dataclasses
import random

import pytest

sk = pytest.importorskip("sklearn.metrics")

from moot.metrics.classification import (  # noqa: E402
    UNPARSED,
    MetricReport,
    accuracy,
    confusion_matrix,
    f_avg,
    macro_prf,
    precision_recall_f1,
    rumor_f1,
    summarize,
)

SENTINEL = "__sentinel_unparsed__"  # outside every label set; what sklearn sees
STANCE = ["favor", "against", "none"]


def _sk(pred):
    return [SENTINEL if p is None or p == UNPARSED else p for p in pred]


def _random_case(seed: int, labels: list[str], n: int):
    rng = random.Random(seed)
    gold = [rng.choice(labels) for _ in range(n)]
    choices = list(labels) + [None, UNPARSED]
    pred = [g if rng.random() < 0.4 else rng.choice(choices) for g in gold]
    return gold, pred


HAND_CASES = [
    # unparsed in both spellings, every class hit once
    (["favor", "favor", "against", "none"], ["favor", None, UNPARSED, "none"]),
    # "against" is never predicted -> precision 0.0, no crash
    (["favor", "against", "against", "none"], ["favor", "favor", "none", "none"]),
    # everything unparsed
    (["favor", "against", "none"], [None, UNPARSED, None]),
    # perfect
    (["none", "against", "favor"], ["none", "against", "favor"]),
]
RANDOM_CASES = [_random_case(seed, STANCE, n) for seed, n in [(0, 1), (1, 5), (2, 30), (3, 200)]]
CASES = HAND_CASES + RANDOM_CASES


@pytest.mark.parametrize(("gold", "pred"), CASES)
def test_accuracy_matches_sklearn(gold, pred):
    assert accuracy(gold, pred) == pytest.approx(sk.accuracy_score(gold, _sk(pred)))


@pytest.mark.parametrize(("gold", "pred"), CASES)
def test_per_class_matches_sklearn(gold, pred):
    p, r, f, s = sk.precision_recall_fscore_support(
        gold, _sk(pred), labels=STANCE, average=None, zero_division=0
    )
    got = precision_recall_f1(gold, pred, STANCE)
    assert list(got) == STANCE
    for i, lab in enumerate(STANCE):
        assert got[lab][:3] == pytest.approx((p[i], r[i], f[i]))
        assert got[lab][3] == s[i]


@pytest.mark.parametrize(("gold", "pred"), CASES)
def test_macro_matches_sklearn(gold, pred):
    p, r, f, _ = sk.precision_recall_fscore_support(
        gold, _sk(pred), labels=STANCE, average="macro", zero_division=0
    )
    assert macro_prf(gold, pred, STANCE) == pytest.approx((p, r, f))


@pytest.mark.parametrize(("gold", "pred"), CASES)
def test_f_avg_matches_sklearn(gold, pred):
    want = sk.f1_score(
        gold, _sk(pred), labels=["favor", "against"], average="macro", zero_division=0
    )
    assert f_avg(gold, pred) == pytest.approx(want)


@pytest.mark.parametrize(("gold", "pred"), CASES)
def test_confusion_matrix_matches_sklearn(gold, pred):
    cols = STANCE + [SENTINEL]
    want = sk.confusion_matrix(gold, _sk(pred), labels=cols)
    got = confusion_matrix(gold, pred, STANCE)
    assert list(got) == STANCE
    for i, g in enumerate(STANCE):
        assert list(got[g]) == STANCE + [UNPARSED]
        assert [got[g][c] for c in STANCE + [UNPARSED]] == list(want[i])


@pytest.mark.parametrize("seed", range(6))
def test_rumor_f1_matches_sklearn(seed):
    labels = ["rumor", "non-rumor"]
    gold, pred = _random_case(100 + seed, labels, 40)
    # the sentinel makes the target multiclass, so ask sklearn for per-class F1
    want = sk.f1_score(gold, _sk(pred), labels=labels, average=None, zero_division=0)
    assert rumor_f1(gold, pred) == pytest.approx(tuple(want))


def test_rumor_f1_custom_label_names():
    gold = ["fake", "fake", "real", "real"]
    pred = ["fake", None, "fake", "real"]
    # fake: tp=1 fp=1 fn=1 -> 0.5 ; real: tp=1 fp=0 fn=1 -> 2/3
    assert rumor_f1(gold, pred, rumor="fake", non_rumor="real") == pytest.approx((0.5, 2 / 3))
    with pytest.raises(ValueError):
        rumor_f1(gold, pred)  # default names do not match gold


def test_hand_computed_values_with_unparsed():
    gold = ["a", "a", "b", "b"]
    pred = ["a", None, UNPARSED, "b"]
    assert accuracy(gold, pred) == 0.5
    # unparsed is a false negative for its gold class, never a false positive
    assert precision_recall_f1(gold, pred, ["a", "b"]) == {
        "a": (1.0, 0.5, pytest.approx(2 / 3), 2),
        "b": (1.0, 0.5, pytest.approx(2 / 3), 2),
    }
    assert confusion_matrix(gold, pred, ["a", "b"]) == {
        "a": {"a": 1, "b": 0, UNPARSED: 1},
        "b": {"a": 0, "b": 1, UNPARSED: 1},
    }


def test_unparsed_differs_from_a_wrong_real_label():
    gold = ["a", "b", "b"]
    as_unparsed = precision_recall_f1(gold, ["a", "b", None], ["a", "b"])
    as_wrong = precision_recall_f1(gold, ["a", "b", "a"], ["a", "b"])
    assert as_unparsed["a"][0] == 1.0  # no false positive for "a"
    assert as_wrong["a"][0] == 0.5


def test_class_never_predicted():
    gold = ["x", "y", "y", "z"]
    pred = ["x", "x", "z", "z"]
    got = precision_recall_f1(gold, pred, ["x", "y", "z"])
    assert got["y"] == (0.0, 0.0, 0.0, 2)
    assert macro_prf(gold, pred, ["x", "y", "z"])[0] == pytest.approx((0.5 + 0 + 0.5) / 3)


def test_class_absent_from_gold_and_pred():
    got = precision_recall_f1(["x", "x"], ["x", None], ["x", "y"])
    assert got["y"] == (0.0, 0.0, 0.0, 0)


def test_single_class():
    gold = ["only"] * 4
    pred = ["only", "only", None, UNPARSED]
    p, r, f, s = precision_recall_f1(gold, pred, ["only"])["only"]
    assert (p, r, s) == (1.0, 0.5, 4)
    assert f == pytest.approx(2 / 3)
    assert macro_prf(gold, pred, ["only"]) == pytest.approx((1.0, 0.5, 2 / 3))
    report = summarize(gold, pred, ["only"])
    assert report.f_avg is None and report.n_unparsed == 2


def test_f_avg_counts_none_predictions_as_errors():
    gold = ["favor", "against", "none", "none"]
    pred = ["none", "against", "favor", "none"]
    # favor: tp=0 -> 0 ; against: perfect -> 1
    assert f_avg(gold, pred) == pytest.approx(0.5)
    assert f_avg(["pro", "con"], ["pro", None], favor="pro", against="con") == pytest.approx(0.5)


def test_summarize_report():
    gold, pred = _random_case(7, STANCE, 50)
    report = summarize(gold, pred, STANCE, metric="f_avg")
    assert isinstance(report, MetricReport)
    assert report.n == 50
    assert report.n_unparsed == sum(1 for p in pred if p is None or p == UNPARSED)
    assert report.accuracy == pytest.approx(sk.accuracy_score(gold, _sk(pred)))
    assert report.macro_f1 == pytest.approx(
        sk.f1_score(gold, _sk(pred), labels=STANCE, average="macro", zero_division=0)
    )
    assert report.per_class_f1 == {k: v[2] for k, v in precision_recall_f1(gold, pred, STANCE).items()}
    assert report.f_avg == pytest.approx(f_avg(gold, pred))
    assert report.score == report.f_avg and report.metric == "f_avg"
    assert report.confusion == confusion_matrix(gold, pred, STANCE)
    assert summarize(gold, pred, STANCE, metric="accuracy").score == report.accuracy
    text = report.format()
    assert "f_avg=" in text and "unparsed" in text
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.n = 1  # type: ignore[misc]


def test_summarize_bad_metric_choices():
    with pytest.raises(ValueError, match="unknown metric"):
        summarize(["a"], ["a"], ["a"], metric="auc")
    with pytest.raises(ValueError, match="f_avg"):
        summarize(["a"], ["a"], ["a"], metric="f_avg")


@pytest.mark.parametrize(
    "call",
    [
        lambda g, p: accuracy(g, p),
        lambda g, p: precision_recall_f1(g, p, STANCE),
        lambda g, p: macro_prf(g, p, STANCE),
        lambda g, p: f_avg(g, p),
        lambda g, p: rumor_f1(g, p),
        lambda g, p: confusion_matrix(g, p, STANCE),
        lambda g, p: summarize(g, p, STANCE),
    ],
)
def test_input_errors(call):
    with pytest.raises(ValueError, match="empty"):
        call([], [])
    with pytest.raises(ValueError, match="length"):
        call(["favor", "none"], ["favor"])


def test_gold_label_not_in_labels():
    with pytest.raises(ValueError, match="not in labels"):
        precision_recall_f1(["favor", "maybe"], ["favor", "favor"], STANCE)
    with pytest.raises(ValueError, match="not in labels"):
        confusion_matrix(["maybe"], ["favor"], STANCE)


def test_bad_label_sets():
    with pytest.raises(ValueError):
        macro_prf(["a"], ["a"], [])
    with pytest.raises(ValueError):
        macro_prf(["a"], ["a"], ["a", "a"])
    with pytest.raises(ValueError):
        macro_prf(["a"], ["a"], ["a", UNPARSED])
    with pytest.raises(ValueError):
        accuracy([None], ["a"])  # type: ignore[list-item]
