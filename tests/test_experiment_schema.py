"""Experiment files (moot.experiment.schema): a valid file loads into arms and datasets; each kind of
bad input is one line naming the file, line and key, raised before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from moot.experiment.schema import ExperimentError, load_experiment

ROOT = Path(__file__).resolve().parents[1]
GOOD = f"""experiment: demo
title: COLA against its baselines
arms:
  - {{name: cola, scenario: cola}}
  - {{name: direct, scenario: cola_direct}}
  - {{name: cola-json, scenario: cola, set: {{judger.output: json, debate: false}}}}
datasets: [{ROOT / 'datasets' / 'demo-stance.yaml'}]
repeats: 2
compare: {{reference: cola, metrics: [macro_f1, accuracy]}}
published: {{table: COLA/Table 2, rows: {{cola: COLA, direct: GPT-3.5}}}}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_valid_file_loads_with_its_overrides_applied(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, GOOD))
    assert [a.name for a in exp.arms] == ["cola", "direct", "cola-json"]
    assert exp.arm("cola-json").scenario.judger.output == "json" and exp.arm("cola-json").scenario.debate is False
    assert exp.arm("cola").scenario.judger.output == "option"
    assert [d.name for d in exp.datasets] == ["demo-stance"] and exp.spec.repeats == 2


@pytest.mark.parametrize("old, new, line, key, says", [
    ("repeats: 2", "repets: 2", 8, "repets", "unknown key"),
    ("judger.output: json", "judger.outpt: json", 6, "arms[2].set.judger.outpt", "judger.outpt"),
    ("set: {judger.output: json, debate: false}", "set: {rounds: 3}", 6, "arms[2].set.rounds", "rounds"),
    ("name: direct", "name: cola", 5, "arms[1].name", "named twice"),
    ("reference: cola", "reference: colla", 9, "compare.reference", "did you mean 'cola'"),
    ("metrics: [macro_f1, accuracy]", "metrics: [macro_f1, rf1]", 9, "compare.metrics[1]", "not defined"),
    ("direct: GPT-3.5}", "direct: GPT-4}", 10, "published.rows.direct", "not a row"),
    ("table: COLA/Table 2", "table: COLA/Table 9", 10, "published.table", "no published table"),
    ("scenario: cola_direct", "scenario: cola_dirct", 5, "arms[1].scenario", "did you mean 'cola_direct'"),
    ("repeats: 2", "repeats: 0", 8, "repeats", "greater than or equal to 1"),
    ("experiment: demo", "experiment: ../x", 1, "experiment", "must start with a letter"),
    ("repeats: 2", "score: {grader: scripted}", 8, "score.grader", "not a deciding role of arm 'cola'"),
    ("repeats: 2", "score: {judger: nosuch:x}", 8, "score.judger", "nosuch"),
    ("reference: cola,", "reference: cola, test: mcnemar,", 9, "compare.test", "does not test macro_f1, f_avg"),
])
def test_bad_input_is_one_line_naming_file_line_and_key(tmp_path: Path, old: str, new: str, line: int, key: str,
                                                        says: str) -> None:
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(ExperimentError) as bad:
        load_experiment(path)
    message = str(bad.value)
    assert "\n" not in message and message.startswith(f"{path}:{line}: {key}:"), message
    assert says in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.yaml"]  # nothing written


def test_a_test_is_accepted_where_it_tests_the_compared_metric(tmp_path: Path) -> None:
    """McNemar tests accuracy: accepted when accuracy alone is compared and no published table shows
    another metric; the bootstrap, the paired t and Wilcoxon test any metric."""
    alone = GOOD.replace("metrics: [macro_f1, accuracy]}", "metrics: [accuracy], test: mcnemar}")
    assert load_experiment(write(tmp_path, alone.replace("published: ", "# published: "))).spec.compare.test == "mcnemar"
    for test in ("bootstrap", "paired_t", "wilcoxon"):
        text = GOOD.replace("reference: cola,", f"reference: cola, test: {test},")
        assert load_experiment(write(tmp_path, text)).spec.compare.test == test
    headline = GOOD.replace(", metrics: [macro_f1, accuracy]}", ", test: mcnemar}").replace("published: ", "# published: ")
    with pytest.raises(ExperimentError, match=r"exp.yaml:9: compare.test: mcnemar does not test macro_f1"):
        load_experiment(write(tmp_path, headline))  # the runs' headline metric, not named in the file


def test_a_dataset_without_labels_cannot_be_compared(tmp_path: Path) -> None:
    data = tmp_path / "unlabelled.jsonl"
    data.write_text('{"id": "1", "text": "t", "target": "x"}\n', encoding="utf-8")
    (tmp_path / "unlabelled.yaml").write_text("path: unlabelled.jsonl\nformat: jsonl\ncolumns: {text: text, "
                                               "target: target, id: id}\n", encoding="utf-8")
    text = GOOD.replace(str(ROOT / "datasets" / "demo-stance.yaml"), "unlabelled")
    with pytest.raises(ExperimentError, match=r"exp.yaml:7: datasets\[0\]: unlabelled has no label column"):
        load_experiment(write(tmp_path, text))


def test_item_arms_need_a_dataset_and_conferences_take_none(tmp_path: Path) -> None:
    no_data = "\n".join(line for line in GOOD.splitlines() if not line.startswith("datasets"))
    with pytest.raises(ExperimentError, match=r"exp.yaml:4: arms\[0\]: arm 'cola' runs items"):
        load_experiment(write(tmp_path, no_data))
    conference = "experiment: c\narms: [{name: a, scenario: drug_policy}]\ndatasets: [demo-stance]\n"
    with pytest.raises(ExperimentError, match=r"exp.yaml:3: datasets: no arm runs items"):
        load_experiment(write(tmp_path, conference))


BUNDLED = sorted((ROOT / "experiments").glob("*.yaml"))


DEMO = {"s2mad": "demo-rumour-veracity", "heller_table4": "demo-sentiment"}  # else demo-stance (the files' own advice)


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_bundled_experiments_validate(path: Path) -> None:
    """Each bundled experiment loads; one whose dataset points at data this machine lacks (a paper's
    split, not shipped) says which file it expects, and with moot's demo set in its place (as its
    comment advises: --dataset) nothing else is wrong with it."""
    try:
        exp = load_experiment(path)
    except ExperimentError as exc:
        assert "path: file not found" in str(exc) and "datasets[" in str(exc), str(exc)
        demo = next((d for prefix, d in DEMO.items() if path.stem.startswith(prefix)), "demo-stance")
        assert f"--dataset {demo}" in path.read_text(encoding="utf-8")
        exp = load_experiment(path, [demo])
    assert exp.arms and (exp.datasets or not any(a.protocol.units.items for a in exp.arms))


def test_a_bundled_experiment_plans_by_name(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from moot.cli import main

    monkeypatch.chdir(ROOT)
    assert main(["run", "du_agents_rounds", "--plan", "--limit", "4", "--repeat", "1", "--out", str(tmp_path / "x")]) == 0
    shown = capsys.readouterr().out
    assert "| a3-r2/demo-stance/default/seed-0 | 4 | 0 | 36 |" in shown and not (tmp_path / "x").exists()


@pytest.mark.parametrize("arm, key, says", [
    ("{name: j, command: judge-evl, options: {task: stance}}", "arms[0].command", "did you mean 'judge-eval'"),
    ("{name: j, command: judge-eval, options: {task: stanse}}", "arms[0].options", "invalid choice: 'stanse'"),
    ("{name: j, command: judge-eval}", "arms[0].options", "missing options: --task"),
    ("{name: j, command: judge-eval, scenario: cola, options: {task: stance}}", "arms[0].command", "give one of"),
])
def test_a_command_arm_is_checked_like_any(tmp_path: Path, arm: str, key: str, says: str) -> None:
    path = write(tmp_path, f"experiment: j\narms:\n  - {arm}\ndatasets: [{ROOT / 'datasets' / 'demo-stance.yaml'}]\n")
    with pytest.raises(ExperimentError) as bad:
        load_experiment(path)
    assert str(bad.value).startswith(f"{path}:3: {key}:") and says in str(bad.value), str(bad.value)


def test_validate_checks_experiment_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from moot.cli import main

    good = write(tmp_path, GOOD)
    assert main(["validate", str(good)]) == 0 and capsys.readouterr().out == f"ok: {good}\n"
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("repeats: 2", "repets: 2"), encoding="utf-8")
    assert main(["validate", str(bad)]) == 2
    assert capsys.readouterr().out.startswith(f"{bad}:8: repets: unknown key")
    paper = ROOT / "experiments" / "cola_table5.yaml"  # its test split is not here: checked on the demo set
    assert main(["validate", str(paper), "--dataset", "demo-stance"]) == 0


def test_a_dataset_moot_ships_is_found_by_name_from_any_folder(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, GOOD.replace(str(ROOT / "datasets" / "demo-stance.yaml"), "demo-stance")))
    assert exp.datasets[0].name == "demo-stance" and exp.datasets[0].path.is_file()
