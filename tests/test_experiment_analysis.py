"""An experiment's analysis (moot.experiment.analysis) and its tables (moot.experiment.tables) on cells
made here: per-arm intervals, paired comparisons on shared units only, the published column."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from scipy import stats as sp
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from moot.experiment.analysis import Cell, Column, analyse, arm_stat
from moot.experiment.tables import arms_grid, measured_of, published_grid, published_columns
from moot.metrics import stats
from moot.metrics.classification import summarize
from moot.report.formats import latex, markdown, to_csv
from moot.report.published import table

LABELS = ("favor", "against", "neutral")
TARGETS = {f"i{i}": ("Atheism" if i % 2 else "Hillary Clinton") for i in range(120)}


def cell(arm: str, seed: int, right: float, n: int = 120, dataset: str = "semeval2016") -> Cell:
    rng = np.random.default_rng(zlib.crc32(f"{arm}-{seed}".encode()))  # the same data in every process
    gold = {f"i{i}": LABELS[i % 3] for i in range(n)}
    pred = {i: (g if rng.random() < right else LABELS[(LABELS.index(g) + 1) % 3]) for i, g in gold.items()}
    return Cell(arm, dataset, "local", seed, LABELS, gold, pred)


CELLS = [cell(a, s, r) for a, r in (("cola", 0.8), ("direct", 0.5), ("cot", 0.55)) for s in (0, 1, 2)]


def test_arm_stat_is_the_metric_per_repeat_with_its_intervals() -> None:
    cola = [c for c in CELLS if c.arm == "cola"]
    found = arm_stat(cola, Column("semeval2016", "macro_f1"), resamples=300)
    assert found is not None
    expected = [summarize([c.gold[i] for i in sorted(c.gold)], [c.pred[i] for i in sorted(c.gold)],
                          LABELS).macro_f1 for c in cola]
    assert found.values == pytest.approx(expected, abs=1e-12)
    low, high = sp.t.interval(0.95, 2, loc=np.mean(expected), scale=sp.sem(expected))
    assert (found.over_repeats.low, found.over_repeats.high) == (pytest.approx(low), pytest.approx(high))
    assert found.over_items.low < found.mean < found.over_items.high and found.items == 120
    assert found.spread.seed_sd == pytest.approx(np.std(expected, ddof=1))


def test_comparisons_pair_units_and_use_the_papers_tests() -> None:
    result = analyse(CELLS, Column("semeval2016", "accuracy"), "local", ["cola", "direct", "cot"], "cola",
                     resamples=300)
    direct = result.comparison("direct")
    assert direct is not None and direct.primary == "paired_t" and direct.paired == 360 and direct.dropped == 0
    a = [c for c in CELLS if c.arm == "direct"]
    b = [c for c in CELLS if c.arm == "cola"]
    acc = [[float(c.pred[i] == c.gold[i]) for i in sorted(c.gold)] for c in a], \
          [[float(c.pred[i] == c.gold[i]) for i in sorted(c.gold)] for c in b]
    assert direct.paired_t.pvalue == pytest.approx(sp.ttest_rel(np.mean(acc[0], 1), np.mean(acc[1], 1)).pvalue)
    x, y = np.concatenate(acc[0]).astype(bool), np.concatenate(acc[1]).astype(bool)
    table_ = [[np.sum(x & y), np.sum(x & ~y)], [np.sum(~x & y), np.sum(~x & ~y)]]
    assert direct.mcnemar.pvalue == pytest.approx(mcnemar(table_, exact=True).pvalue, abs=1e-12)
    assert direct.delta.estimate < 0 and direct.delta.high < 0  # cola is clearly better
    raw = [c.pvalue for c in result.comparisons]
    assert all(0 < p < 1 for p in raw)
    assert [c.adjusted for c in result.comparisons] == pytest.approx(list(multipletests(raw, method="holm")[1]))


def test_one_repeat_tests_the_tables_own_metric_with_the_paired_bootstrap() -> None:
    """One repeat of macro-F1: the p is the paired bootstrap's of macro-F1 itself (not McNemar's of
    accuracy), equal to one recomputed from scipy's bootstrap of the metric computed item by item."""
    one = [cell("cola", 0, 0.8, n=60), cell("direct", 0, 0.6, n=60)]
    result = analyse(one, Column("semeval2016", "macro_f1"), "local", ["cola", "direct"], "cola", resamples=300)
    found = result.comparison("direct")
    assert found is not None and found.primary == "bootstrap" and found.pvalue == found.bootstrap.pvalue
    ids = sorted(one[0].gold)

    def delta(idx: np.ndarray, axis: int = -1) -> float:
        picked = [ids[i] for i in np.asarray(idx, dtype=int)]
        a, b = (summarize([c.gold[i] for i in picked], [c.pred[i] for i in picked], LABELS).macro_f1 for c in one[::-1])
        return a - b

    ref = sp.bootstrap((np.arange(len(ids)),), delta, n_resamples=300, method="percentile", vectorized=False,
                       rng=np.random.default_rng(stats.SEED))
    dist = np.round(ref.bootstrap_distribution, 12)  # a floating residue of zero is zero
    side = min(np.sum(dist <= 0), np.sum(dist >= 0))
    assert found.pvalue == pytest.approx(min(1.0, 2 * (1 + side) / 301), abs=1e-12)
    assert (found.delta.low, found.delta.high) == (pytest.approx(ref.confidence_interval.low, abs=1e-12),
                                                   pytest.approx(ref.confidence_interval.high, abs=1e-12))
    assert "(bootstrap)" in markdown(arms_grid(result)) and "(mcnemar)" not in markdown(arms_grid(result))


def test_repeats_without_variance_say_so_instead_of_a_zero_width_interval() -> None:
    """Deterministic repeats (the same answers under every seed): no interval over repeats and no
    paired t, said in the table; the p is the paired bootstrap's over items."""
    same = [Cell(c.arm, c.dataset, c.model, seed, c.labels, c.gold, c.pred) for c in
            (cell("cola", 0, 0.8), cell("direct", 0, 0.5)) for seed in (0, 1, 2)]
    result = analyse(same, Column("semeval2016", "f_avg"), "local", ["cola", "direct"], "cola", resamples=200)
    found = result.comparison("direct")
    assert found is not None and found.primary == "bootstrap" and found.paired_t.note == stats.NO_VARIANCE
    assert 0 < found.pvalue < 0.05 and not math.isnan(found.mde.estimate)
    shown = markdown(arms_grid(result))
    rows = "".join(line for line in shown.splitlines() if line.startswith(("| cola", "| direct")))
    assert rows.count("no variance across repeats") == 3  # each arm's interval, and the silent paired t
    assert "(bootstrap); paired_t: no variance across repeats" in shown


def test_csv_cells_hold_numbers_markdown_and_latex_the_readable_cells() -> None:
    """One cell model, three renderings: the arms' and the published CSV have the interval's ends,
    its flags, p, its test and n in columns of their own (no "[low, high]" nor "p (test)"), on the
    table's scale; Markdown and LaTeX keep the readable cells."""
    import csv
    import io

    from moot.experiment.tables import arms_grid

    same = [Cell(c.arm, c.dataset, c.model, seed, c.labels, c.gold, c.pred) for c in
            (cell("cola", 0, 0.8), cell("direct", 0, 0.5)) for seed in (0, 1)]
    result = analyse(same, Column("semeval2016", "f_avg"), "local", ["cola", "direct"], "cola", resamples=200)
    grid = arms_grid(result)
    rows = {r["arm"]: r for r in csv.DictReader(io.StringIO(to_csv(grid)))}
    direct, found = rows["direct"], result.comparison("direct")
    assert found is not None
    assert float(direct["delta"]) == pytest.approx(found.delta.estimate, abs=1e-12)
    assert float(direct["ci_delta_low"]) == pytest.approx(found.delta.low, abs=1e-12)
    assert float(direct["p"]) == pytest.approx(found.pvalue, abs=1e-12) and direct["test"] == "bootstrap"
    assert direct["p_note"] == "paired_t: no variance across repeats"
    assert direct["ci_repeats_low"] == "" and direct["ci_repeats_flags"] == stats.NO_VARIANCE
    assert (direct["paired"], direct["dropped"], direct["partial"]) == ("240", "0", "False")
    assert rows["cola"]["delta"] == "" and float(rows["cola"]["mean"]) == pytest.approx(result.arms[0].mean)
    for row in rows.values():  # every cell of a number column reads as one
        for key in ("mean", "ci_items_low", "ci_items_high", "seed_sd", "item_se", "delta", "p", "p_holm", "mde"):
            assert row[key] == "" or math.isfinite(float(row[key])), (key, row[key])
    shown = markdown(grid)
    assert "(bootstrap); paired_t: no variance across repeats" in shown and "240 / 0" in shown
    assert "240 / 0" in latex(grid)


def test_an_interval_whose_every_draw_is_alike_says_so_instead_of_a_zero_width_one() -> None:
    """Two arms alike on every item: Δ's bootstrap draws are all 0, shown as its reason, not [0.000, 0.000]."""
    from moot.experiment.tables import interval

    one = cell("cola", 0, 0.8)
    twin = Cell("twin", one.dataset, one.model, 0, one.labels, one.gold, one.pred)
    found = analyse([one, twin], Column("semeval2016", "accuracy"), "local", ["cola", "twin"], "cola", resamples=200)
    delta = found.comparisons[0].delta
    assert delta.low == delta.high == 0.0 and delta.note == "no variation across items"
    shown = interval(delta)
    assert shown == "no variation across items" and shown.values == (None, None, "no variation across items")
    assert "[0.000, 0.000]" not in markdown(arms_grid(found))


def test_units_without_their_pair_are_dropped_and_counted() -> None:
    short = [cell("cola", s, 0.8, n=100) for s in (0, 1)] + [cell("direct", s, 0.5) for s in (0, 1, 2)]
    found = analyse(short, Column("semeval2016", "accuracy"), "local", ["cola", "direct"], "cola", resamples=200)
    c = found.comparison("direct")
    assert c is not None and c.paired == 200  # 100 shared items x 2 shared seeds
    assert c.dropped == (100 * 2 + 120 * 3) - 2 * 200


def test_the_published_table_puts_the_papers_figure_beside_the_measured_one() -> None:
    cola = table("COLA/Table 2")
    columns = published_columns(cola)
    analyses = {name: analyse(CELLS, col, "local", ["cola", "direct", "cot"], "cola", TARGETS, resamples=200)
                for name, col in columns.items()}
    rows = {"cola": "COLA", "direct": "GPT-3.5", "cot": "GPT-3.5+COT"}
    grid = published_grid({"local": {name: measured_of(a, cola, rows) for name, a in analyses.items()}}, cola, rows,
                          ["cola", "direct", "cot"])
    assert grid.head[:5] == ("paper row", "paper's model", "arm", "measured model", "column")
    hc = next(r for r in grid.rows if r[2] == "cola" and r[4] == "HC")
    measured = analyses["HC"].arm("cola")
    assert measured is not None
    assert hc[:4] == ("COLA", "gpt-3.5-turbo", "cola", "local")  # the paper's model beside the measured one
    assert hc[9] == "81.7*" and hc[5].rstrip("*") == f"{100 * measured.mean:.1f}"
    assert hc[5].endswith("*")  # cola beats the best baseline with raw p < 0.05 (paired t), the paper's rule
    assert float(hc[10]) == pytest.approx(100 * measured.mean - 81.7, abs=0.051)
    assert not any(r[4] == "DT" for r in grid.rows)  # no Donald Trump item measured: named in a note
    assert any("Not measured here" in n and "DT" in n and "HC" not in n for n in grid.notes)
    for text in (markdown(grid), to_csv(grid), latex(grid)):
        assert "81.7" in text
    import csv
    import io
    hc_csv = next(r for r in csv.DictReader(io.StringIO(to_csv(grid))) if r["arm"] == "cola" and r["column"] == "HC")
    assert float(hc_csv["measured"]) == pytest.approx(100 * measured.mean) and hc_csv["mark"] == "*"
    assert float(hc_csv["ci_low"]) < float(hc_csv["measured"]) < float(hc_csv["ci_high"])
    assert hc_csv["n_items"] == "60" and (hc_csv["published"], hc_csv["published_mark"]) == ("81.7", "*")
    assert r"\toprule" in latex(grid) and "Δ" not in latex(grid)
    assert "vs direct" not in markdown(arms_grid(analyses["HC"]))


def test_the_papers_rule_marks_against_its_baselines_and_the_strict_rule_against_every_arm() -> None:
    """COLA's `*`: better than the best of the paper's baselines (rows), raw p of the paired t-test.
    An arm the paper does not have (self-consistency, as good as COLA) withholds the strict rule's
    mark, not the paper's; the table prints the rule and the test that decided."""
    cola = table("COLA/Table 2")
    cells = CELLS + [cell("sc", s, 0.8) for s in (0, 1, 2)]
    arms = ["cola", "direct", "cot", "sc"]
    rows = {"cola": "COLA", "direct": "GPT-3.5", "cot": "GPT-3.5+COT"}
    hc = analyse(cells, published_columns(cola)["HC"], "local", arms, "cola", TARGETS, resamples=200)
    paper, strict = measured_of(hc, cola, rows)["cola"], measured_of(hc, cola, rows, "strict")["cola"]
    found = hc.comparison("cot")
    assert found is not None and found.paired_t.pvalue < 0.05 and paper.mark == "*" and paper.tested == "paired_t"
    assert strict.mark == "" and strict.tested == "paired_t"
    assert measured_of(hc, cola, rows)["cot"].mark == ""  # only the row the paper marks
    notes = " ".join(published_grid({"m": {"HC": measured_of(hc, cola, rows)}}, cola, rows, arms).notes)
    assert "the paper's rule (cola_stance_detection.txt:256" in notes and "raw p < 0.05, paired_t" in notes
    assert "GPT-3.5, GPT-3.5+COT" in notes and "paired_t: paired t-test of the column's metric over repeats" in notes
    assert "the strict rule" in " ".join(published_grid({"m": {"HC": measured_of(hc, cola, rows, "strict")}}, cola, rows, arms,
                                                        rule="strict").notes)


def test_a_mark_where_the_papers_test_is_silent_is_decided_by_the_bootstrap_and_says_so() -> None:
    """Deterministic repeats: no paired t; the mark is the paired bootstrap's of F_avg, named."""
    cola = table("COLA/Table 2")
    same = [Cell(c.arm, c.dataset, c.model, seed, c.labels, c.gold, c.pred) for c in
            (cell("cola", 0, 0.9), cell("direct", 0, 0.4)) for seed in (0, 1, 2)]
    rows = {"cola": "COLA", "direct": "GPT-3.5"}
    hc = analyse(same, published_columns(cola)["HC"], "local", ["cola", "direct"], "cola", TARGETS, resamples=200)
    marked = measured_of(hc, cola, rows)["cola"]
    assert (marked.mark, marked.tested) == ("*", "bootstrap")
    notes = " ".join(published_grid({"m": {"HC": measured_of(hc, cola, rows)}}, cola, rows, ["cola", "direct"]).notes)
    assert "bootstrap: paired bootstrap test of the column's metric over items (B = 2000, seed 20240229)" in notes


def test_two_models_each_get_their_rows_in_the_published_table() -> None:
    cola = table("COLA/Table 2")
    analyses = {name: analyse(CELLS, col, "local", ["cola", "direct"], "cola", TARGETS, resamples=200)
                for name, col in published_columns(cola).items()}
    grid = published_grid({axis: {name: measured_of(a, cola, models={"cola": model, "direct": model})
                                  for name, a in analyses.items()}
                           for axis, model in (("a", "local"), ("b", "openai:gpt-4o-mini"))},
                          cola, {"cola": "COLA", "direct": "GPT-3.5"}, ["cola", "direct"])
    hc = [(r[2], r[3]) for r in grid.rows if r[4] == "HC"]
    assert hc == [("cola", "local"), ("cola", "openai:gpt-4o-mini"), ("direct", "local"), ("direct", "openai:gpt-4o-mini")]


def test_round_dynamics_count_changes_and_agreement() -> None:
    from moot.experiment.dynamics import round_stats

    units = [("favor", [["favor", "against", "favor"], ["favor", "favor", "favor"]]),   # wrong->right, to majority
             ("against", [["against", "against", "favor"], ["against", "favor", "favor"]]),  # right->wrong
             ("neutral", [[None, "neutral", "neutral"], ["neutral", "neutral", "neutral"]])]  # unparsed->right
    first, second = round_stats(units, resamples=200)
    assert first.accuracy.estimate == pytest.approx(np.mean([2 / 3, 2 / 3, 2 / 3]))
    assert second.accuracy.estimate == pytest.approx(np.mean([1, 1 / 3, 1]))
    assert (first.agreement, second.agreement) == (0.0, pytest.approx(2 / 3))
    assert second.right_to_wrong == pytest.approx(1 / 9) and second.wrong_to_right == pytest.approx(2 / 9)
    assert second.to_majority == pytest.approx(2 / 3)  # favor (majority) and neutral (majority); not favor in unit 2


def test_plots_draw_cjk_and_emoji_labels_without_a_warning(tmp_path, capfd) -> None:
    import warnings

    from matplotlib.font_manager import FontProperties, findfont

    from moot.experiment.plots import arm_bars
    from moot.kit._fonts import fit

    cells = [Cell(a, "微博", "local", 0, LABELS, c.gold, c.pred) for a, c in (("cola", CELLS[0]), ("direct", CELLS[3]))]
    zero = Cell("zero", "微博", "local", 0, LABELS, CELLS[0].gold, {i: None for i in CELLS[0].gold})
    targets = {i: "新冠 🦠" for i in CELLS[0].gold}
    found = analyse([*cells, zero], Column("微博", "accuracy", "新冠 🦠"), "local", ["cola", "direct", "zero"], "cola",
                    targets, resamples=100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        written = arm_bars(found, tmp_path, "cjk")
    assert [p.suffix for p in written] == [".png", ".svg"] and all(p.stat().st_size > 0 for p in written)
    assert capfd.readouterr().err == ""
    drawn = fit("新冠 🦠", findfont(FontProperties()))[0]  # as the plot's texts are drawn (moot.report.plots)
    assert "🦠" not in drawn or fit("🦠", findfont(FontProperties()))[1]  # replaced unless a font has it
    svg = written[1].read_text(encoding="utf-8")
    assert "0.000" in svg  # the zero bar is labelled as zero


def test_a_deliberation_that_ended_early_keeps_its_last_answers() -> None:
    """S2MAD's debaters stop when they agree: later rounds count their agreed answers, unchanged."""
    from moot.experiment.dynamics import round_stats

    units = [("fake", [["fake", "fake"]]),                                    # agreed at once
             ("real", [["fake", "real"], ["real", "real"], ["real", "real"]])]  # agreed in round 1
    rounds = round_stats(units, resamples=200)
    assert len(rounds) == 3
    assert [r.accuracy.estimate for r in rounds] == pytest.approx([0.75, 1.0, 1.0])
    assert [r.agreement for r in rounds] == pytest.approx([0.5, 1.0, 1.0])
    assert rounds[1].wrong_to_right == pytest.approx(1 / 4) and rounds[2].wrong_to_right == 0.0
