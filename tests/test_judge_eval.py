"""judge-eval on a dataset made by the test, with the scripted model as an oracle.

The scripted model answers a structured label request with the label named by a
`SCRIPTED_LABEL=<label>` marker in the prompt (GARBAGE: an unparseable reply), so each
item's prediction is known in advance, whatever the concurrency.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moot.cli import main
from moot.protocols.judge_eval.judge import label_model
from moot.protocols.judge_eval.schema import labels_for

# id, gold (dataset value), the label the scripted judge will answer
ITEMS = [("a1", "1", "favor"), ("a2", "1", "against"), ("a3", "0", "against"),
         ("a4", "0", "GARBAGE"), ("a5", "2", "neutral"), ("a6", "2", "favor")]
GOLD = {"1": "favor", "0": "against", "2": "neutral"}


def make_dataset(folder: Path, items=ITEMS) -> Path:
    lines = ["id,text,topic,stance"]
    lines += [f'{i},"Opinion {i}. SCRIPTED_LABEL={answer}",school uniforms,{gold}' for i, gold, answer in items]
    (folder / "toy.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = folder / "toy_stance.yaml"
    spec.write_text("path: toy.csv\nformat: csv\ncolumns: {id: id, text: text, target: topic, label: stance}\n"
                    'labels: {"0": against, "1": favor, "2": neutral}\n', encoding="utf-8")
    return spec


def last_line(capsys) -> str:
    return capsys.readouterr().out.strip().splitlines()[-1]


def results(out: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {r["id"]: r for r in rows}


def test_judge_eval_predictions_metrics_and_resume(tmp_path, capsys):
    spec, out = make_dataset(tmp_path), tmp_path / "run"
    argv = ["judge-eval", str(spec), "--task", "stance", "--model", "scripted", "--out", str(out),
            "--concurrency", "3", "--quiet"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert printed.strip().splitlines()[-1] == f"run: {out} items=6 backend_calls=6 cache_hits=0 unparsed=1"
    assert "accuracy=0.5000" in printed  # a1, a3, a5 right; a4 unparsed counts as wrong
    assert "macro P/R/F1=0.6667/0.5000/0.5556" in printed and "F1[neutral]=0.6667" in printed
    got = results(out)
    assert {i: r["prediction"] for i, r in got.items()} == {
        "a1": "favor", "a2": "against", "a3": "against", "a4": "unparsed", "a5": "neutral", "a6": "favor"}
    assert {i: r["gold"] for i, r in got.items()} == {i: GOLD[g] for i, g, _ in ITEMS}
    meta = json.loads((out / "run.json").read_text())
    assert meta["protocol"] == "judge_eval" and meta["task"] == "stance" and meta["planned_units"] == 6
    assert meta["labels"] == ["favor", "against", "neutral"] and meta["models"] == {"judge": "scripted"}
    assert meta["headline_metric"] == "macro_f1"
    # The judge of the conference scenario asks, with a Literal-constrained answer.
    event = json.loads((out / "a1.jsonl").read_text().splitlines()[1])
    assert event["type"] == "call" and event["role"] == "judge"
    assert event["messages"][0]["type"] == "SystemMessage" and "Judge" in event["messages"][0]["content"]
    assert 'towards the target "school uniforms"' in event["messages"][1]["content"]

    # Finished: nothing is sent again. Killed mid-way (a result line lost): its transcript answers.
    assert main(argv) == 0
    assert last_line(capsys) == f"run: {out} items=6 backend_calls=0 cache_hits=0 unparsed=1"
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text("\n".join(lines[:-2]) + "\n")
    assert main(argv) == 0
    assert last_line(capsys) == f"run: {out} items=6 backend_calls=0 cache_hits=0 unparsed=1"
    assert len((out / "results.jsonl").read_text().splitlines()) == 6


def test_polarity_task_and_run_dir_identity(tmp_path, capsys):
    spec = make_dataset(tmp_path)
    out = tmp_path / "run"
    assert main(["judge-eval", str(spec), "--task", "stance", "--model", "scripted", "--out", str(out)]) == 0
    # Same data, same scenario, another task: the run directory refuses it.
    pol = tmp_path / "toy_pol.yaml"
    pol.write_text("path: toy.csv\ncolumns: {id: id, text: text, target: topic, label: stance}\n"
                   'labels: {"0": negative, "1": positive, "2": neutral}\n', encoding="utf-8")
    assert main(["judge-eval", str(pol), "--task", "polarity", "--model", "scripted", "--out", str(out)]) == 2
    assert "holds a run with another" in capsys.readouterr().err
    out2 = tmp_path / "pol"
    assert main(["judge-eval", str(pol), "--task", "polarity", "--model", "scripted", "--out", str(out2)]) == 0
    # favor/against markers are not polarity labels: the scripted judge answers the first option.
    assert {r["prediction"] for r in results(out2).values()} <= {"positive", "negative", "neutral", "unparsed"}
    assert json.loads((out2 / "run.json").read_text())["labels"] == ["positive", "negative", "neutral"]


def test_labels_and_structured_output():
    assert labels_for("stance", ["against", "favor"]) == ["favor", "against"]
    assert labels_for("stance", ["none", "favor", "against"]) == ["favor", "against", "none"]
    assert labels_for("polarity", ["positive"]) == ["positive", "negative", "neutral"]
    with pytest.raises(ValueError, match="not among"):
        labels_for("polarity", ["favor"])
    schema = label_model(("favor", "against")).model_json_schema()
    assert list(schema["properties"]) == ["label", "explanation"]
    assert schema["properties"]["label"]["enum"] == ["favor", "against"]


def test_bad_task_label_is_a_usage_error(tmp_path, capsys):
    spec = make_dataset(tmp_path)
    assert main(["judge-eval", str(spec), "--task", "polarity", "--model", "scripted",
                 "--out", str(tmp_path / "x")]) == 2
    assert "not among" in capsys.readouterr().err


def test_judge_rescored_with_another_model_reports_beside_the_original(tmp_path, capsys):
    spec, out = make_dataset(tmp_path), tmp_path / "run"
    assert main(["judge-eval", str(spec), "--task", "stance", "--model", "scripted", "--out", str(out), "--quiet"]) == 0
    assert main(["score", str(out), "--role", "judge=scripted:AGREEMENT"]) == 0
    rescored = tmp_path / "run-rescored-judge-scripted_AGREEMENT"
    again = results(rescored)
    assert {i: r["prediction"] for i, r in again.items()} == {i: r["prediction"] for i, r in results(out).items()}
    assert all(r["decided_by"] == "judge (rescored: judge=scripted:AGREEMENT)" for r in again.values())
    capsys.readouterr()
    report = tmp_path / "report"
    assert main(["report", str(out), str(rescored), "--out", str(report)]) == 0
    printed = capsys.readouterr().out
    assert "| judge-eval stance · scripted | R1 | 1/6 | 0.500 | 0.667 | 0.500 | 0.556 |" in printed
    assert "| judge-eval stance · scripted:AGREEMENT | R2 | 1/6 | 0.500 | 0.667 | 0.500 | 0.556 |" in printed
