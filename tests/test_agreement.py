"""Blind human ratings (`moot annotate`, answers piped to stdin) and the agreement figures of
`moot report`, each equal to its reference implementation on the same ratings: scikit-learn's
cohen_kappa_score, the krippendorff package's interval alpha, scipy's spearmanr."""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from moot.cli import main
from moot.log.annotations import read_ratings
from moot.log.transcript import load
from moot.metrics.agreement import cohen_kappa, kappa_of, krippendorff_interval, label_codes, spearman, with_interval
from moot.protocols.conference.events import Score, Verdict
from moot.protocols.conference.verdicts import CRITERIA
from run_support import annotate_at_terminal as annotate, scored_conference

SEEDS = range(6)


@pytest.mark.parametrize("seed", SEEDS)
def test_cohen_kappa_equals_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    a = [str(x) for x in rng.choice(["AGREEMENT", "MORE_DEBATE", "x"][: 2 + seed % 2], 30)]
    b = [x if rng.random() < 0.6 else str(rng.choice(["AGREEMENT", "MORE_DEBATE"])) for x in a]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    holes = [None if i % 7 == 0 else x for i, x in enumerate(a)]  # missing ratings leave the pair out
    kept = [i for i, x in enumerate(holes) if x is not None]
    assert cohen_kappa(holes, b) == pytest.approx(cohen_kappa_score([a[i] for i in kept], [b[i] for i in kept]),
                                                  abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_krippendorff_interval_alpha_equals_the_krippendorff_package(seed):
    rng = np.random.default_rng(seed)
    data = rng.integers(1, 11, (2 + seed % 3, 20)).astype(float)
    data[1] = np.clip(data[0] + rng.integers(-2, 3, 20), 1, 10)  # some agreement
    data[rng.random(data.shape) < 0.1] = np.nan
    ours = krippendorff_interval([[None if math.isnan(v) else v for v in row] for row in data])
    assert ours == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="interval"), abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_spearman_equals_scipy(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 11, 25).astype(float)
    b = np.clip(a + rng.integers(-3, 4, 25), 1, 10)
    assert spearman(list(a), list(b)) == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)
    assert math.isnan(spearman([5.0] * 5, [1.0, 2.0, 3.0, 4.0, 5.0]))  # a constant rater: undefined


def test_the_interval_is_a_bootstrap_over_units_and_holds_the_estimate():
    rng = np.random.default_rng(3)
    a = [str(x) for x in rng.choice(["A", "B"], 40)]
    b = [x if rng.random() < 0.8 else ("A" if x == "B" else "B") for x in a]
    found = with_interval(kappa_of, label_codes(a, b), 40)
    assert found.low <= found.estimate <= found.high and found.n == 40 and found.low < found.high
    assert found == with_interval(kappa_of, label_codes(a, b), 40)  # the same every time (a fixed seed)
    assert math.isnan(with_interval(kappa_of, label_codes(a[:1], b[:1]), 1).low)


def test_annotate_is_blind_kept_beside_the_run_and_resumable(make_scenario, tmp_path, monkeypatch, capsys):
    out = scored_conference(make_scenario, tmp_path)
    t = load(out / "conference.jsonl")
    verdicts, scores = t.of_type(Verdict), t.of_type(Score)
    things = len(verdicts) + len(scores)
    answers = []
    for event in sorted([*verdicts, *scores], key=lambda e: e.turn):
        answers += ["2"] if isinstance(event, Verdict) else [str(1 + n % 10) for n in range(len(CRITERIA))]
    shown = annotate(out, "ann", ["x", *answers], monkeypatch, capsys)  # "x" does not read: asked again
    assert f"{things} thing(s) to rate" in shown and "that does not read" in shown
    first = shown.split("model (")[0]
    assert "Judge" not in first and "verdict" not in first.split("T1 R1 verdict")[1]  # the material holds no verdict
    ratings = read_ratings(out)
    assert {r.rater for r in ratings} == {"ann"} and len(ratings) == len(verdicts) + len(CRITERIA) * len(scores)
    assert [r.value for r in ratings if r.kind == "verdict"] == ["MORE_DEBATE"] * len(verdicts)
    assert all(r.ts for r in ratings)
    assert all(e.type != "rating" for e in load(out / "conference.jsonl").events)  # not in the transcript
    again = annotate(out, "ann", [], monkeypatch, capsys)
    assert f"0 thing(s) to rate" in again and f"({things} rated before)" in again


def test_report_agreement_equals_the_references(make_scenario, tmp_path, monkeypatch, capsys):
    out = scored_conference(make_scenario, tmp_path)
    t = load(out / "conference.jsonl")
    order = sorted([*t.of_type(Verdict), *t.of_type(Score)], key=lambda e: e.turn)
    rng = np.random.default_rng(5)
    people: dict[str, list[str]] = {}
    for rater in ("ann", "bob"):
        answers = []
        for event in order:
            if isinstance(event, Verdict):
                answers.append(event.verdict if rng.random() < 0.7 else "MORE_DEBATE")
            else:
                answers += [str(int(np.clip(event.scores[c] + rng.integers(-2, 3), 1, 10))) for c in CRITERIA]
        people[rater] = answers
        annotate(out, rater, answers, monkeypatch, capsys)
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    with open(tmp_path / "rep" / "agreement.csv", encoding="utf-8") as f:
        rows = {(r["question"], r["statistic"], r["raters"]): r for r in csv.DictReader(f)}
    ratings = read_ratings(out)

    def given(rater, kind, key):
        return [r.value for r in ratings if r.rater == rater and r.kind == kind and r.key == key]

    model_verdicts = [v.verdict for v in t.of_type(Verdict)]
    for rater in ("ann", "bob"):
        expected = cohen_kappa_score(given(rater, "verdict", "verdict"), model_verdicts)
        assert float(rows[("verdict", "kappa", f"{rater}~model")]["estimate"]) == pytest.approx(expected, abs=1e-12)
    expected = cohen_kappa_score(given("ann", "verdict", "verdict"), given("bob", "verdict", "verdict"))
    assert float(rows[("verdict", "kappa", "ann~bob")]["estimate"]) == pytest.approx(expected, abs=1e-12)
    for c in CRITERIA:
        model = [s.scores[c] for s in t.of_type(Score)]
        ann, bob = ([float(v) for v in given(r, "scores", c)] for r in ("ann", "bob"))
        alpha = krippendorff.alpha(reliability_data=np.array([model, ann, bob]), level_of_measurement="interval")
        assert float(rows[(c, "alpha", "model+ann+bob")]["estimate"]) == pytest.approx(alpha, abs=1e-12)
        alpha = krippendorff.alpha(reliability_data=np.array([ann, bob]), level_of_measurement="interval")
        assert float(rows[(c, "alpha", "ann+bob")]["estimate"]) == pytest.approx(alpha, abs=1e-12)
        rho = spearmanr(ann, model).statistic
        found = rows[(c, "rho", "ann~model")]
        assert float(found["estimate"]) == pytest.approx(rho, abs=1e-12) if not math.isnan(rho) else found["estimate"] == "nan"
        assert int(found["n"]) == len(model) == 5
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "## Human and model ratings" in report and "| question | model | ann | bob | kappa ann~model |" in report


def test_a_labelled_items_run_is_rated_by_its_labels(tmp_path, monkeypatch, capsys):
    out = tmp_path / "cola"
    assert main(["run", "cola", "--dataset", "demo-stance", "--limit", "4", "--model", "scripted", "--out", str(out),
                 "--quiet"]) == 0
    capsys.readouterr()
    shown = annotate(out, "ann", ["1", "2", "favor", "3"], monkeypatch, capsys)
    assert "4 thing(s) to rate" in shown and "Your label for this item" in shown
    ratings = read_ratings(out)
    assert [r.value for r in ratings] == ["favor", "against", "favor", "neutral"]
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    with open(tmp_path / "rep" / "agreement.csv", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    predictions = [json.loads(line)["prediction"] for line in (out / "results.jsonl").read_text().splitlines()]
    expected = cohen_kappa_score([r.value for r in ratings], predictions)
    assert (row["statistic"], row["raters"], int(row["n"])) == ("kappa", "ann~model", 4)
    assert float(row["estimate"]) == pytest.approx(expected, abs=1e-12)


def test_rho_over_every_resample_at_once_equals_scipy_on_each():
    from moot.metrics.agreement import rho_of

    rng = np.random.default_rng(2)
    draws = rng.integers(1, 6, (50, 2, 12)).astype(float)  # small scales: many ties
    draws[0, 1] = 3.0  # a constant rater: undefined
    found = rho_of(draws)
    expected = [spearmanr(d[0], d[1]).statistic for d in draws[1:]]
    assert np.isnan(found[0])
    assert np.allclose(found[1:], expected, atol=1e-12, rtol=0)


def test_graded_judge_decisions_are_rated_as_the_grader_did_in_table_5_shape(make_scenario, tmp_path, monkeypatch,
                                                                              capsys):
    out = scored_conference(make_scenario, tmp_path)
    assert main(["score", str(out), "--role", "grader=scripted"]) == 0
    graded = Path(f"{out}-rescored-grader-scripted")
    t = load(graded / "conference.jsonl")
    grades = [s for s in t.of_type(Score) if s.kind == "judge_decision"]
    order = sorted([*t.of_type(Verdict), *[s for s in t.of_type(Score) if s.kind == "debate"], *grades],
                   key=lambda e: (e.turn, isinstance(e, Score) and e.kind == "judge_decision"))
    answers = []
    for event in order:
        if isinstance(event, Verdict):
            answers.append(event.verdict)  # the people agree with every verdict
        elif event.kind == "judge_decision":
            answers.append("9")
        else:
            answers += ["5"] * len(CRITERIA)
    shown = annotate(graded, "ann", answers, monkeypatch, capsys)
    assert "How correct is the judge's decision" in shown and "The judge's decision:" in shown
    assert main(["report", str(graded), "--out", str(tmp_path / "rep")]) == 0
    report = (tmp_path / "rep" / "report.md").read_text()
    table = report.split("### By part of the units (Table 5's shape)")[1]
    assert "| R1 scripted | 100% (n=2) | 100% (n=1) | 100% (n=3) |" in table
    grade = table.split("grade:")[1].split("scores:")[0]
    mean = sum(g.overall for g in grades) / len(grades)
    assert f"| {mean:.1f} / 9.0 (n={len(grades)}) |" in grade


def test_a_damaged_annotations_file_is_one_line_naming_its_line(tmp_path, capsys):
    from moot.log.annotations import AnnotationError

    good = '{"rater":"a","unit":"u","item":"i","kind":"k","key":"q","value":"1","ts":"t","seconds":0}'
    (tmp_path / "annotations.jsonl").write_text(good + "\n" + good[:30])  # a torn tail: left out
    assert len(read_ratings(tmp_path)) == 1
    (tmp_path / "annotations.jsonl").write_text('{"rater": 1}\n' + good + "\n")
    with pytest.raises(AnnotationError, match=r"annotations.jsonl:1: not a rating"):
        read_ratings(tmp_path)


def test_at_the_terminal_a_name_is_asked_until_given_and_input_ending_early_keeps_what_was_rated(
        tmp_path, monkeypatch, capsys):
    out = tmp_path / "cola"
    assert main(["run", "cola", "--dataset", "demo-stance", "--limit", "2", "--model", "scripted", "--out", str(out),
                 "--quiet"]) == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n  \nann\n\nfavor\n"))  # no name twice, then an empty label
    capsys.readouterr()
    assert main(["annotate", str(out)]) == 1
    shown = capsys.readouterr()
    assert shown.out.count("that does not read: give a name") == 2
    assert "that does not read: choose one of favor, against, neutral" in shown.out
    assert shown.err.count("\n") == 1 and "the input ended before everything was rated; the 1 rated now" in shown.err
    assert [(r.rater, r.value) for r in read_ratings(out)] == [("ann", "favor")]
    assert main(["annotate", str(out), "--rater", " "]) == 2
