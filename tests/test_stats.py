"""moot.metrics.stats and moot.metrics.coded against statsmodels / scipy / exact enumeration, to 1e-9.

Fixtures are made here from fixed seeds (numbers, not model output)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sp
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower, TTestPower
from statsmodels.stats.weightstats import DescrStatsW

from moot.metrics import stats
from moot.metrics.classification import summarize, value_of
from moot.metrics.coded import Resampling, features, resampled, score, value, weights

TOL = 1e-9
RNG = np.random.default_rng(7)
REPEATS = [0.61, 0.64, 0.58, 0.66, 0.63]
SCORES_A = RNG.integers(1, 11, 40)
SCORES_B = np.clip(SCORES_A + RNG.integers(-3, 3, 40), 1, 10)
CORRECT_A = (RNG.random(300) < 0.7).astype(float)
CORRECT_B = (RNG.random(300) < 0.6).astype(float)


def test_t_interval_equals_statsmodels() -> None:
    got = stats.t_interval(REPEATS)
    low, high = DescrStatsW(np.array(REPEATS)).tconfint_mean(alpha=0.05)
    assert got.estimate == pytest.approx(np.mean(REPEATS), abs=TOL)
    assert (got.low, got.high) == (pytest.approx(low, abs=TOL), pytest.approx(high, abs=TOL))
    assert got.n == 5


def test_t_interval_degenerate_cases_say_why() -> None:
    one = stats.t_interval([0.5])
    assert math.isnan(one.low) and "one repeat" in one.note
    for same in ([0.138, 0.138, 0.138], [0.1 + 0.2, 0.3, 0.3]):  # the second differs by a floating residue
        found = stats.t_interval(same)
        assert math.isnan(found.low) and math.isnan(found.high) and found.note == stats.NO_VARIANCE


def test_a_t_interval_stays_in_the_metrics_range_and_flags_too_few_repeats() -> None:
    values = [0.75, 1.0]  # two repeats: df 1, the t interval reaches far past 1
    low, high = DescrStatsW(np.array(values)).tconfint_mean(alpha=0.05)
    assert low < 0 and high > 1
    free = stats.t_interval(values)
    assert (free.low, free.high) == (pytest.approx(low, abs=TOL), pytest.approx(high, abs=TOL))
    assert free.flags == ("2 repeats: too few",)
    bounded = stats.t_interval(values, bounds=(0.0, 1.0))
    assert (bounded.low, bounded.high) == (0.0, 1.0)
    assert bounded.flags == ("2 repeats: too few", "clipped to [0, 1]")
    assert stats.t_interval(REPEATS, bounds=(0.0, 1.0)).flags == ()  # five repeats well inside [0, 1]
    assert stats.percentile_interval(0.5, [0.4, 0.6, 0.5], 12).flags == ("12 items: too few",)


def test_equal_differences_up_to_a_floating_residue_have_no_variance() -> None:
    a, b = [0.3, 0.1 + 0.2, 0.3], [0.1, 0.1, 0.1]
    assert 0 < np.std(np.subtract(a, b), ddof=1) < 1e-15  # what `sd > 0` let through
    assert math.isnan(stats.mde_paired(stats.sd_difference(a, b), 3).estimate)
    silent = stats.paired_t(a, b)
    assert math.isnan(silent.pvalue) and silent.note == stats.NO_VARIANCE


def test_the_bootstrap_test_is_the_p_of_scipys_paired_bootstrap_distribution() -> None:
    """The p of Δ = mean(a) − mean(b) recomputed with numpy from scipy.stats.bootstrap's own
    distribution (paired, same seed), and consistent with its percentile interval."""
    for a, b in ((CORRECT_A, CORRECT_B), (CORRECT_A[:40], CORRECT_A[:40][::-1])):
        ref = sp.bootstrap((a, b), lambda x, y, axis=-1: x.mean(axis) - y.mean(axis), paired=True, vectorized=True,
                           n_resamples=999, method="percentile", rng=np.random.default_rng(5))
        dist = np.round(ref.bootstrap_distribution, 12)  # a floating residue of zero is zero
        side = min(np.sum(dist <= 0), np.sum(dist >= 0))
        got = stats.bootstrap_test(dist, a.size, 999, 5)
        assert got.pvalue == pytest.approx(min(1.0, 2 * (1 + side) / 1000), abs=TOL)
        assert (got.pvalue < 0.05) == (ref.confidence_interval.low > 0 or ref.confidence_interval.high < 0)
    assert stats.bootstrap_test(np.zeros(999), 40, 999, 5).pvalue == 1.0  # two arms alike on every draw
    assert stats.bootstrap_test(np.ones(999), 40, 999, 5).pvalue == pytest.approx(2 / 1000)


def test_bootstrap_interval_is_scipys_percentile_bootstrap() -> None:
    got = stats.bootstrap_interval(CORRECT_A, stats.mean, resamples=500, seed=3)
    ref = sp.bootstrap((CORRECT_A,), lambda x, axis=-1: np.mean(x, axis=axis), n_resamples=500, method="percentile",
                       vectorized=True, axis=-1, rng=np.random.default_rng(3)).confidence_interval
    assert (got.low, got.high) == (pytest.approx(ref.low, abs=TOL), pytest.approx(ref.high, abs=TOL))
    assert got.low < got.estimate < got.high and got.n == 300


def test_paired_bootstrap_resamples_items_jointly() -> None:
    """Δ of means with items resampled jointly is the bootstrap of the per-item differences."""
    got = stats.paired_bootstrap(CORRECT_A, CORRECT_B, stats.mean, resamples=800, seed=11)
    alone = stats.bootstrap_interval(CORRECT_A - CORRECT_B, stats.mean, resamples=800, seed=11)
    assert got.estimate == pytest.approx(CORRECT_A.mean() - CORRECT_B.mean(), abs=TOL)
    assert (got.low, got.high) == (pytest.approx(alone.low, abs=TOL), pytest.approx(alone.high, abs=TOL))
    with pytest.raises(ValueError, match="differ in length"):
        stats.paired_bootstrap(CORRECT_A, CORRECT_B[:-1], stats.mean)


def test_mcnemar_exact_equals_statsmodels() -> None:
    got = stats.mcnemar_exact(CORRECT_A, CORRECT_B)
    a, b = CORRECT_A.astype(bool), CORRECT_B.astype(bool)
    table = [[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]]
    ref = mcnemar(table, exact=True)
    assert got.pvalue == pytest.approx(ref.pvalue, abs=TOL)
    assert got.statistic == pytest.approx(ref.statistic, abs=TOL)
    small = stats.mcnemar_exact([1, 1, 1, 0, 1], [0, 0, 1, 1, 1])  # 3 vs 1 discordant
    assert small.pvalue == pytest.approx(mcnemar([[2, 2], [1, 0]], exact=True).pvalue, abs=TOL)
    assert stats.mcnemar_exact([1, 0], [1, 0]).pvalue == 1.0


def test_wilcoxon_equals_exact_enumeration() -> None:
    a = np.array([7.0, 5, 9, 3, 8, 6, 10, 4, 2, 6.5])
    b = np.array([5.0, 6.2, 4, 3.4, 1, 6.9, 7.8, 4.3, 2.1, 2])
    got = stats.wilcoxon(a, b)
    d = a - b
    ranks = sp.rankdata(np.abs(d))
    plus = ranks[d > 0].sum()
    smaller = min(plus, ranks.sum() - plus)
    sums = [sum(r for r, s in zip(ranks, signs) if s) for signs in itertools.product([0, 1], repeat=d.size)]
    exact = min(1.0, 2 * sum(1 for s in sums if s <= smaller) / len(sums))
    assert got.statistic == pytest.approx(smaller, abs=TOL)
    assert got.pvalue == pytest.approx(exact, abs=TOL)
    tied = stats.wilcoxon(SCORES_A, SCORES_B)  # ties and zeros: scipy's normal approximation
    assert tied.pvalue == pytest.approx(sp.wilcoxon(SCORES_A - SCORES_B).pvalue, abs=TOL)
    assert stats.wilcoxon([3, 4], [3, 4]).pvalue == 1.0


def test_paired_t_equals_statsmodels() -> None:
    b = [0.55, 0.60, 0.57, 0.59, 0.60]
    got = stats.paired_t(REPEATS, b)
    t, p, df = DescrStatsW(np.subtract(REPEATS, b)).ttest_mean(0)
    assert (got.statistic, got.pvalue) == (pytest.approx(t, abs=TOL), pytest.approx(p, abs=TOL))
    assert got.n == df + 1
    constant = stats.paired_t([0.5, 0.6], [0.4, 0.5])  # constant difference: t undefined
    assert math.isnan(constant.pvalue) and constant.note == stats.NO_VARIANCE


def test_holm_equals_statsmodels() -> None:
    p = [0.01, 0.04, 0.03, 0.20, 0.005]
    assert stats.holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]), abs=TOL)
    with_nan = stats.holm([0.04, math.nan, 0.01])
    assert with_nan[0] == pytest.approx(multipletests([0.04, 0.01], method="holm")[1][0], abs=TOL)
    assert math.isnan(with_nan[1])


def test_mde_paired_reaches_the_power_statsmodels_computes() -> None:
    for n in (5, 30, 676):
        got = stats.mde_paired(0.2, n)
        effect = got.estimate / 0.2
        assert TTestPower().power(effect_size=effect, nobs=n, alpha=0.05) == pytest.approx(0.8, abs=TOL)
        solved = TTestPower().solve_power(nobs=n, alpha=0.05, power=0.8)
        assert effect == pytest.approx(solved, rel=1e-4)  # statsmodels stops its solver earlier (7e-6 at n = 676)
    assert math.isnan(stats.mde_paired(0.0, 10).estimate)
    normal = stats.mde_normal(0.05, 100).estimate / 0.05  # standardized: NormalIndPower with one group
    assert NormalIndPower().power(effect_size=normal, nobs1=1, alpha=0.05, ratio=0) == pytest.approx(0.8, abs=TOL)


def test_spread_separates_seed_and_item_variation() -> None:
    got = stats.spread(REPEATS, [0.02, 0.03])
    assert got.seed_sd == pytest.approx(DescrStatsW(np.array(REPEATS), ddof=1).std, abs=TOL)
    assert got.item_se == pytest.approx(0.025, abs=TOL) and got.repeats == 5
    assert stats.sd_difference([1, 2, 4], [0, 0, 0]) == pytest.approx(sp.tstd([1, 2, 4]), abs=TOL)


@pytest.mark.parametrize("metric", ["accuracy", "macro_f1", "f_avg", "macro_precision", "macro_recall",
                                    "f1:none"])
def test_coded_metrics_equal_the_classification_metrics(metric: str) -> None:
    labels = ["favor", "against", "none"]
    rng = np.random.default_rng(5)
    gold = [labels[i] for i in rng.integers(0, 3, 200)]
    pred = [None if i == 3 else labels[i] for i in rng.integers(0, 4, 200)]
    report = summarize(gold, pred, labels, metric="f_avg")
    expected = {"macro_precision": report.macro_precision, "macro_recall": report.macro_recall,
                "f1:none": report.per_class_f1["none"]}.get(metric) or value_of(report, metric, labels)
    assert value(features(gold, pred, labels), metric, labels) == pytest.approx(expected, abs=1e-12)


def test_coded_rumour_class_f1() -> None:
    labels = ["rumor", "non-rumor"]
    gold = ["rumor", "rumor", "non-rumor", "non-rumor", "rumor"]
    pred = ["rumor", "non-rumor", "non-rumor", "unparsed", "rumor"]
    report = summarize(gold, pred, labels)
    for metric in ("rf1", "nf1"):
        assert value(features(gold, pred, labels), metric, labels) == pytest.approx(value_of(report, metric, labels))
    with pytest.raises(ValueError, match="not defined"):
        value(features(["favor"], ["favor"], ["favor", "against"]), "rf1", ["favor", "against"])


def test_the_resampled_statistic_is_scipys_bootstrap_of_the_metric() -> None:
    """Drawing item indices and weighting feature rows gives, draw for draw, the metric of the
    resampled items: the same interval as scipy's bootstrap of the metric computed item by item."""
    labels = ["pro", "con", "neutral"]
    rng = np.random.default_rng(9)
    gold = [labels[i] for i in rng.integers(0, 3, 60)]
    pred = [g if rng.random() < 0.6 else labels[rng.integers(0, 3)] for g in gold]
    runs = [features(gold, pred, labels)]
    got = stats.bootstrap_interval(np.arange(60), resampled(runs, "macro_f1", labels), resamples=300, seed=4)

    def slow(idx: np.ndarray, axis: int = -1) -> float:
        picked = np.asarray(idx, dtype=int)
        return summarize([gold[i] for i in picked], [pred[i] for i in picked], labels).macro_f1

    ref = sp.bootstrap((np.arange(60),), slow, n_resamples=300, method="percentile", vectorized=False,
                       rng=np.random.default_rng(4)).confidence_interval
    assert (got.low, got.high) == (pytest.approx(ref.low, abs=1e-12), pytest.approx(ref.high, abs=1e-12))
    assert got.estimate == pytest.approx(summarize(gold, pred, labels).macro_f1, abs=1e-12)
    twice = resampled([runs[0], runs[0][::-1]], "accuracy", labels)  # two repeats: their mean
    assert float(twice(np.arange(60))) == pytest.approx(value(runs[0], "accuracy", labels))
    assert weights(np.array([[0, 0, 2], [1, 2, 2]]), 3).tolist() == [[2, 0, 1], [0, 1, 2]]


def test_the_shared_resampling_gives_scipys_interval_and_standard_error() -> None:
    """Resampling draws scipy's indices; the percentile interval and standard error of the
    distribution it gives equal scipy.stats.bootstrap's own, for a macro-F1 over 90 items."""
    labels = ["pro", "con", "neutral"]
    rng = np.random.default_rng(12)
    gold = [labels[i] for i in rng.integers(0, 3, 90)]
    pred = [g if rng.random() < 0.5 else labels[rng.integers(0, 3)] for g in gold]
    run = features(gold, pred, labels)
    boot = Resampling(700, 21, batch=128)
    dist = score(boot.counts("run", run), "macro_f1", labels)
    got = stats.percentile_interval(value(run, "macro_f1", labels), dist, 90, 700, 21)
    ref = sp.bootstrap((np.arange(90),), resampled([run], "macro_f1", labels), n_resamples=700, method="percentile",
                       vectorized=True, axis=-1, rng=np.random.default_rng(21))
    assert (got.low, got.high) == (pytest.approx(ref.confidence_interval.low, abs=1e-12),
                                   pytest.approx(ref.confidence_interval.high, abs=1e-12))
    assert stats.standard_error(dist) == pytest.approx(ref.standard_error, abs=1e-12)
    assert boot.counts("run", run) is boot.counts("run", run)  # kept: a second metric costs no product
    for batch in (1, 7, 700):  # weights not kept (a server): the same draws, a block at a time
        streamed = Resampling(700, 21, batch=batch, keep_weights=False)
        assert np.array_equal(streamed.counts("run", run), boot.counts("run", run)) and not streamed._weights
