"""`report` over runs whose predictions are known: tables cell by cell, plots, partial runs,
the declared headline metric, skipped rows, and conference runs per topic.

Hand-built run folders as the previous moot wrote them (run.json + results.jsonl naming
`transcripts/ID.jsonl` + a schema-1 first event) check every cell against metrics computed by
hand; true end-to-end runs on the scripted oracle check the path from a dataset (or a batch of
conferences) to the report.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from moot.cli import main
from moot.report import build_report
from test_judge_eval import make_dataset

U = "unparsed"


def make_run(folder: Path, name: str, meta: dict, rows: list[tuple], planned: int | None = None) -> Path:
    """rows: (id, gold, prediction[, target])."""
    run = folder / name
    (run / "transcripts").mkdir(parents=True)
    meta = {"scenario_sha256": "s" * 64, "dataset_sha256": "d" * 64, "models": {"default": "scripted"},
            "created": "2026-01-01T00:00:00+00:00", **meta}
    if planned is not None:
        meta["planned_items"] = planned
    (run / "run.json").write_text(json.dumps(meta))
    lines = []
    for row in rows:
        item_id, gold, pred = row[:3]
        transcript = run / "transcripts" / f"{item_id}.jsonl"
        inputs = {"text": "t", **({"target": row[3]} if len(row) > 3 else {})}
        transcript.write_text(json.dumps({"type": "item_started", "inputs": inputs}) + "\n")
        lines.append(json.dumps({"id": item_id, "prediction": pred, "gold": gold, "transcript": str(transcript)}))
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    return run


STANCE = ("favor", "against", "neutral")


def test_a_run_folder_of_an_earlier_version_is_a_cell_to_compare(tmp_path):
    """`moot compare` reads a run folder by its typed run.json, keys of earlier versions too: `planned_items`,
    the scenario's `metric`, a seed written as text."""
    from moot.experiment.report import cell_of_run

    run = make_run(tmp_path, "old", {"protocol": "cola", "dataset_path": "datasets/semeval_toy.yaml",
                                     "labels": list(STANCE), "metric": "accuracy",
                                     "scenario": {"generation": {"seed": "3"}}},
                   [("1", "favor", "favor"), ("2", "against", U)], planned=3)
    found = cell_of_run(run, "A")
    assert (found.metric, found.cell.seed, found.cell.dataset, found.cell.model) == \
        ("accuracy", 3, "semeval_toy", "scripted")
    assert found.cell.partial and found.cell.pred == {"1": "favor", "2": U} and found.dataset_sha256 == "d" * 64


@pytest.fixture
def runs(tmp_path) -> list[Path]:
    cola = make_run(tmp_path, "cola", {"protocol": "cola", "scenario_path": "scenarios/cola.yaml",
                                       "dataset_path": "datasets/semeval_toy.yaml", "labels": list(STANCE),
                                       "headline_metric": "f_avg"},
                    [("1", "favor", "favor", "T1"), ("2", "favor", "against", "T1"),
                     ("3", "against", "against", "T1"), ("4", "neutral", "favor", "T1"),
                     ("5", "against", "against", "T2"), ("6", "against", U, "T2"),
                     ("7", "favor", "favor", "T2")], planned=8)  # one item missing: partial
    judge = make_run(tmp_path, "judge", {"protocol": "judge_eval", "task": "polarity",
                                         "scenario_path": "scenarios/drug_policy.yaml",
                                         "dataset_path": "datasets/toy_polarity.yaml",
                                         "labels": ["positive", "negative", "neutral"]},
                     [("1", "positive", "positive"), ("2", "positive", "negative"),
                      ("3", "negative", "negative"), ("4", "neutral", "neutral")], planned=4)
    rumor = [("1", "fake", "fake"), ("2", "fake", "real"), ("3", "real", "real"), ("4", "real", "real")]
    s2mad = {"protocol": "s2mad", "dataset_path": "datasets/rumours.yaml", "labels": ["fake", "real"]}
    fields = {"protocol": "s2mad", "k": 5, "early": {"first_n": None, "before_s": None}}
    r2 = make_run(tmp_path, "r2", {**s2mad, "scenario_path": "scenarios/s2mad.yaml",
                                   "scenario": {**fields, "rounds": 2}}, rumor, planned=4)
    r1 = make_run(tmp_path, "r1", {**s2mad, "scenario_path": "scenarios/s2mad_r1.yaml",
                                   "scenario": {**fields, "rounds": 1}},
                  [(i, g, "real") for i, g, _ in rumor], planned=4)
    early = make_run(tmp_path, "early", {**s2mad, "scenario_path": "scenarios/s2mad_early.yaml",
                                         "scenario": {**fields, "rounds": 2, "early": {"first_n": 3}}},
                     [(i, g, "fake") for i, g, _ in rumor], planned=4)
    return [cola, judge, r2, r1, early]


def table_csv(out: Path, table: str = "") -> dict[str, dict[str, str]]:
    """Rows of table.csv by variant · model, of the tables whose key starts with `table`."""
    with open(out / "table.csv", encoding="utf-8") as f:
        return {row["variant_model"]: row for row in csv.DictReader(f) if row["table"].startswith(table)}


def test_cells_match_hand_computed_metrics(runs, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["report", *map(str, runs), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    cells = table_csv(out)
    cola = cells["cola · scripted"]
    # T1: F1(favor) = 2*1/(2+2) = .5, F1(against) = 2*1/(2+1) = 2/3 -> F_avg 7/12
    assert cola["semeval_toy: T1 (F_avg)"] == f"{7 / 12:.4f}"
    # T2: F1(favor) = 1, F1(against) = 2*1/(1+2) = 2/3 (the unparsed item is a false negative)
    assert cola["semeval_toy: T2 (F_avg)"] == f"{5 / 6:.4f}"
    # all: favor tp 2, predicted 3, support 3; against tp 2, predicted 3, support 3
    assert cola["semeval_toy (F_avg)"] == f"{2 / 3:.4f}"
    assert cola["status"] == "partial: R1"
    judge = table_csv(out, "judge: toy_polarity")["judge-eval polarity · scripted"]
    # positive: tp 1, predicted 1, support 2; negative: tp 1, predicted 2, support 1; neutral: 1, 1, 1
    assert judge["accuracy"] == "0.7500"
    assert judge["precision"] == f"{(1 + 0.5 + 1) / 3:.4f}" and judge["recall"] == f"{(0.5 + 1 + 1) / 3:.4f}"
    assert judge["F1"] == f"{(2 / 3 + 2 / 3 + 1) / 3:.4f}"
    assert judge["status"] == "complete"
    classes = table_csv(out, "judge_classes: toy_polarity")["judge-eval polarity · scripted"]
    assert (classes["positive"], classes["negative"], classes["neutral"]) == ("0.6667", "0.6667", "1.0000")
    s2 = cells["s2mad · scripted"]  # fake F1 = 2/3, real F1 = 2*2/(3+2) = .8
    assert (s2["rumours acc"], s2["rumours RF1"], s2["rumours NF1"]) == ("0.7500", "0.6667", "0.8000")
    assert s2["rumours macro-F1"] == f"{(2 / 3 + 0.8) / 2:.4f}"
    r1 = cells["s2mad_r1 · scripted"]  # always real: fake F1 0, real F1 2*2/(4+2)
    assert (r1["rumours acc"], r1["rumours RF1"], r1["rumours NF1"]) == ("0.5000", "0.0000", "0.6667")
    # Markdown: the same numbers, the partial cell marked, provenance of every run.
    report = (out / "report.md").read_text()
    assert f"| {7 / 12:.3f}† |" in report and "partial (7 of 8 items)" in report
    assert "s" * 64 in report and "d" * 64 in report and "2026-01-01T00:00:00+00:00" in report
    assert "| favor | 2 | 1 | 0 | 0 |" in report  # confusion row of R1 (gold favor), unparsed column
    assert "| against | 0 | 2 | 0 | 1 |" in report
    assert "cola · scripted" in printed and "†" in printed
    per_class = (out / "per_class.csv").read_text()
    assert "R2,neutral,1.0000,1.0000,1.0000,1" in per_class


def test_plots_written_and_non_empty(runs, tmp_path):
    built = build_report(runs, tmp_path / "report")
    names = {p.name for p in built.plots}
    assert {f"confusion_R{i}.png" for i in range(1, 6)} <= names
    assert {"bars_single_semeval_toy.png", "bars_judge_toy_polarity_polarity.png",
            "bars_judge_classes_toy_polarity_polarity.png", "bars_rumor_rumours.png"} <= names
    assert "s2mad_rounds_1.png" in names and "s2mad_early_1_first_n.png" in names
    for path in built.plots:
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_cells_carry_scipys_interval_over_items_in_csv_and_as_error_bars(runs, tmp_path):
    """table.csv: beside each cell its 95% percentile bootstrap over items (scipy's, same seed and
    draws as an experiment's single repeat), n and the too-few flag in columns of their own; the
    bar chart draws them as error bars."""
    import numpy as np
    from scipy import stats as sp

    from moot.metrics.stats import RESAMPLES, SEED
    from moot.report.plots import error_bars
    from moot.report.tables import main_tables
    from moot.report.build import open_runs

    out = tmp_path / "report"
    assert main(["report", *map(str, runs), "--out", str(out)]) == 0
    judge = table_csv(out, "judge: toy_polarity")["judge-eval polarity · scripted"]
    correct = np.array([1.0, 0.0, 1.0, 1.0])  # the judge run's items, in order
    want = sp.bootstrap((correct,), np.mean, n_resamples=RESAMPLES, method="percentile",
                        rng=np.random.default_rng(SEED)).confidence_interval
    assert (float(judge["accuracy ci_low"]), float(judge["accuracy ci_high"])) == (
        pytest.approx(want.low, abs=5e-5), pytest.approx(want.high, abs=5e-5))
    assert judge["accuracy n"] == "4" and judge["accuracy ci_flags"] == "4 items: too few"
    assert table_csv(out)["cola · scripted"]["semeval_toy: T1 (F_avg) n"] == "4"
    found, _ = open_runs(runs)
    table = next(t for t in main_tables(found) if t.key.startswith("judge: "))
    row = table.rows[0]
    below, above = error_bars(row, ["accuracy"])
    assert below[0] == pytest.approx(0.75 - want.low, abs=1e-9) and above[0] == pytest.approx(want.high - 0.75, abs=1e-9)
    assert below[0] > 0  # drawn


def test_a_bar_chart_names_its_metric_on_the_y_axis():
    from moot.report.plots import metrics_label

    assert metrics_label(["semeval2016: Atheism (f_avg)", "semeval2016 (f_avg)", "vast (macro_f1)"]) == "f_avg, macro_f1"
    assert metrics_label(["no metric named"]) == "score"


def test_end_to_end_judge_eval_then_report(tmp_path, capsys):
    spec = make_dataset(tmp_path)
    out = tmp_path / "run"
    assert main(["judge-eval", str(spec), "--task", "stance", "--model", "scripted", "--out", str(out)]) == 0
    # A second run cut short: only 3 of its 6 items finished.
    partial = tmp_path / "cut"
    assert main(["judge-eval", str(spec), "--task", "stance", "--model", "scripted", "--out", str(partial)]) == 0
    lines = (partial / "results.jsonl").read_text().splitlines()
    (partial / "results.jsonl").write_text("\n".join(lines[:3]) + "\n")
    capsys.readouterr()
    report = tmp_path / "report"
    assert main(["report", str(out), str(partial), "--out", str(report)]) == 0
    cells = table_csv(report, "judge: ")
    row = cells["judge-eval stance · scripted"]
    # gold favor, favor, against, against, neutral, neutral; predicted favor, against, against,
    # unparsed, neutral, favor: acc 3/6; F1 favor 2*1/(2+2), against 2*1/(2+2), neutral 2*1/(1+2);
    # precision favor 1/2, against 1/2, neutral 1/1; recall 1/2 each
    assert row["accuracy"] == "0.5000"
    assert row["F1"] == f"{(0.5 + 0.5 + 2 / 3) / 3:.4f}"
    assert row["precision"] == f"{(0.5 + 0.5 + 1) / 3:.4f}" and row["recall"] == "0.5000"
    assert row["status"] == "complete"
    text = (report / "report.md").read_text()
    assert "| variant · model | runs | unparsed | accuracy | precision | recall | F1 |" in text  # Tables 1, 3, 4
    assert "| variant · model | runs | unparsed | favor | against | neutral |" in text  # Table 2
    cut = next(r for name, r in cells.items() if name.endswith("(R2)"))
    assert cut["status"] == "partial: R2"
    text = (report / "report.md").read_text()
    assert "partial (3 of 6 items, 3 failed or cut short)" in text and "| 6/6 | none | 1 |" in text


def test_not_a_run_folder_is_a_usage_error(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "not a run folder" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing"), "--out", str(tmp_path / "r")]) == 2
    assert "no such run folder" in capsys.readouterr().err


def test_unparsed_column_macro_note_and_dates(runs, tmp_path):
    meta = json.loads((runs[1] / "run.json").read_text())
    del meta["created"]  # a run dir made before run.json recorded dates
    (runs[1] / "run.json").write_text(json.dumps(meta))
    out = tmp_path / "report"
    build_report(runs, out)
    text = (out / "report.md").read_text()
    assert "| variant · model | runs | unparsed | semeval_toy (F_avg) |" in text
    assert "| cola · scripted | R1 | 1/7 | " in text and "| s2mad · scripted | R3 | 0/4 | " in text
    assert table_csv(out)["cola · scripted"]["unparsed"] == "1/7"
    assert "## How the metrics are computed" in text
    assert "full label set" in text and "labels=..., average='macro', zero_division=0" in text
    dates = [line.split(" | ")[-1] for line in text.splitlines() if line.startswith("| R")]
    assert len(dates) == 5 and all(" .. " in d and "last result" not in d for d in dates)
    assert dates[0].startswith("2026-01-01T00:00:00+00:00 .. ") and dates[1].startswith("≈")


def test_plot_titles_fit_and_overall_bar_is_named():
    import matplotlib.pyplot as plt

    from moot.kit.plots import title
    from moot.report.plots import _tick

    columns = ["semeval2016 (F_avg)", "semeval2016: Atheism (F_avg)"]
    assert [_tick(c, "semeval2016", columns) for c in columns] == ["all targets (F_avg)", "Atheism (F_avg)"]
    assert _tick("vast (macro-F1)", "vast", ["vast (macro-F1)"]) == "all items (macro-F1)"
    fig, ax = plt.subplots(figsize=(5.0, 4))
    title(ax, "semeval2016: Stance / classification protocols (paper metric per dataset and target)")
    fig.tight_layout()
    fig.canvas.draw()
    box = ax.title.get_window_extent()
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width  # not clipped at either edge
    plt.close(fig)


def tiny_cola(tmp_path: Path, declared: str = "") -> tuple[Path, Path]:
    """A SemEval-2016-style dataset (named like it, too) with an unmapped label and an empty text."""
    data = tmp_path / "d.csv"
    data.write_text("Tweet,Target,Stance\nyes please,t,1\nno way,t,0\nwhatever,t,2\nhuh,t,9\n,t,1\n",
                    encoding="utf-8")
    spec = tmp_path / "semeval_tiny.yaml"
    spec.write_text("path: d.csv\ncolumns: {text: Tweet, target: Target, label: Stance}\n"
                    'labels: {"0": against, "1": favor, "2": neutral}\n' + declared, encoding="utf-8")
    scenario = tmp_path / "cola.yaml"
    scenario.write_text("protocol: cola\nlabels: [favor, against, neutral]\nmodels: {default: scripted}\n")
    return scenario, spec


def test_batch_prints_the_metric_the_report_shows_first(tmp_path, capsys):
    scenario, spec = tiny_cola(tmp_path, "metric: f_avg\n")  # declared by the dataset spec
    run = tmp_path / "run"
    assert main([str(scenario), "--dataset", str(spec), "--out", str(run), "--quiet"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("f_avg=")
    assert json.loads((run / "run.json").read_text())["headline_metric"] == "f_avg"
    out = tmp_path / "report"
    assert main(["report", str(run), "--out", str(out)]) == 0
    cell = table_csv(out)["cola · scripted"]["semeval_tiny (F_avg)"]
    assert printed[0].split()[0] == f"f_avg={float(cell):.4f}"
    assert "f_avg (run.json)" in (out / "report.md").read_text()


def test_headline_metric_is_declared_never_guessed_from_the_file_name(tmp_path, capsys):
    scenario, spec = tiny_cola(tmp_path)  # named semeval_tiny, but nothing declares F_avg
    run = tmp_path / "run"
    assert main([str(scenario), "--dataset", str(spec), "--out", str(run), "--quiet"]) == 0
    assert json.loads((run / "run.json").read_text())["headline_metric"] == "macro_f1"
    out = tmp_path / "report"
    assert main(["report", str(run), "--out", str(out)]) == 0
    assert "semeval_tiny (macro-F1)" in table_csv(out)["cola · scripted"]
    import moot.metrics.classification

    assert not hasattr(moot.metrics.classification, "paper_metric")


def test_skipped_rows_are_shown_by_reason(tmp_path, capsys):
    scenario, spec = tiny_cola(tmp_path)
    run = tmp_path / "run"
    assert main([str(scenario), "--dataset", str(spec), "--out", str(run), "--quiet"]) == 0
    assert "skipped rows: 1 label not in the mapping, 1 empty text" in capsys.readouterr().out  # the run summary
    assert json.loads((run / "run.json").read_text())["skipped_rows"] == {"label not in the mapping": 1,
                                                                          "empty text": 1}
    out = tmp_path / "report"
    assert main(["report", str(run), "--out", str(out)]) == 0
    text = (out / "report.md").read_text()
    assert "## Dataset rows skipped" in text
    assert "- R1 (semeval_tiny): 1 label not in the mapping, 1 empty text" in text
    assert "| 3/3 | 1 label not in the mapping, 1 empty text |" in text


def test_conference_batch_report_per_topic_with_mean_and_sd(make_scenario, tmp_path, capsys):
    scenario = make_scenario(topics=2)
    batch = tmp_path / "batch"
    # Two models x two seeds: conferences that differ only by seed are pooled, models are groups.
    assert main(["run", str(scenario), "--vary", "model=scripted:MORE_DEBATE,scripted", "--vary", "seed=1,2",
                 "--out", str(batch), "--quiet"]) == 0
    single = tmp_path / "single"
    assert main(["run", str(scenario), "--model", "judge=scripted:GARBAGE", "--out", str(single), "--quiet"]) == 0
    scenario_c, spec = tiny_cola(tmp_path)
    items = tmp_path / "items"
    assert main([str(scenario_c), "--dataset", str(spec), "--out", str(items), "--quiet"]) == 0
    out = tmp_path / "report"
    assert main(["report", str(batch), str(single), str(items), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    text = (out / "report.md").read_text()
    assert "cola · scripted" in text  # the item run's table, in the same report
    assert "### R1: Test conference · model=scripted:MORE_DEBATE (2 conference(s), seeds 1, 2)" in text
    assert "### R1: Test conference · model=scripted (2 conference(s), seeds 1, 2)" in text
    head = "| topic | closed by | rounds to agreement | judge verdicts | evaluator overall |"
    assert text.count(head) == 3
    assert ("| 1. topic number 1 | agreement 2 | 2.00 ± 0.00 (n=2) | AGREEMENT 2, MORE_DEBATE 2 | "
            "7.00 ± 0.00 (n=2) |") in text
    assert "| 1. topic number 1 | agreement 2 | 1.00 ± 0.00 (n=2) | AGREEMENT 2 | 7.00 ± 0.00 (n=2) |" in text
    assert "| 1. topic number 1 | agreement 1 | 2.00 (n=1) | AGREEMENT 1, UNPARSED 1 | 7.00 (n=1) |" in text
    assert "| clarity | 7.00 ± 0.00 (n=2) | 7.00 ± 0.00 (n=2) |" in text
    assert "### R2: Test conference (1 conference(s))" in printed and "| clarity |" not in printed
    rows = list(csv.DictReader(open(out / "conference.csv", encoding="utf-8")))
    assert [(r["run"], r["variant"], r["topic"]) for r in rows][:3] == [
        ("R1", "model=scripted", "1"), ("R1", "model=scripted", "2"), ("R1", "model=scripted:MORE_DEBATE", "1")]
    assert len(rows) == 6 and (rows[2]["rounds_to_agreement_mean"], rows[2]["rounds_to_agreement_sd"],
                               rows[2]["rounds_to_agreement_n"]) == ("2.0", "0.0", "2")  # numbers, n apart
    assert (rows[2]["closed_by_agreement"], rows[2]["verdicts_MORE_DEBATE"], rows[2]["judge_grade_n"]) == ("2", "2", "0")
    assert all(float(r["evaluator_overall_mean"]) == 7.0 for r in rows)
    drawn = sorted(p.name for p in (out / "plots").glob("conference_*.png"))
    assert "conference_R1_1_rounds.png" in drawn and "conference_R2_1_overall.png" in drawn
    assert all((out / "plots" / name).stat().st_size > 0 and f"(plots/{name})" in text for name in drawn)


def test_mean_and_sample_sd():
    from moot.protocols.conference.report import mean_sd

    assert mean_sd([1, 2]) == "1.50 ± 0.71 (n=2)" and mean_sd([3]) == "3.00 (n=1)" and mean_sd([]) == "—"


def test_rescored_conference_scores_count_in_the_report(make_scenario, tmp_path, capsys):
    original = tmp_path / "conf"
    assert main(["run", str(make_scenario(topics=1)), "--out", str(original), "--quiet"]) == 0
    assert main(["score", str(original), "--role", "grader=scripted", "--role", "evaluator=scripted"]) == 0
    out = tmp_path / "report"
    assert main(["report", str(original), str(tmp_path / "conf-rescored-grader-scripted-evaluator-scripted"),
                 "--out", str(out)]) == 0
    text = (out / "report.md").read_text()
    assert "judge decision grade (Table 5)" in text and "| 1.00 (n=1) |" in text
    assert "grader=scripted, evaluator=scripted" in text  # the provenance names the rescoring
