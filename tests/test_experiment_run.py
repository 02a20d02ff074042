"""Running experiments from the command line on the scripted model: one folder per cell and a
manifest; a rerun continues; added repeats run only the new cells; a changed arm is refused with
nothing written; --plan calls no model and writes nothing; shards reported together equal one run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

import pytest

from moot.cli import main
from moot.errors import EXIT_UNPARSED

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = f"""experiment: grid
title: direct vs debate (scripted)
arms:
  - {{name: direct, scenario: cola_direct}}
  - {{name: debate, scenario: debate, set: {{agents: 2, rounds: 1}}}}
  - {{name: first-round, first_round_of: debate}}
datasets: [{ROOT / 'datasets' / 'demo-stance.yaml'}]
models: [scripted]
repeats: 2
limit: 8
compare: {{reference: direct, metrics: [accuracy]}}
published: {{table: COLA/Table 2, rows: {{direct: GPT-3.5}}}}
"""


@pytest.fixture
def here(tmp_path: Path) -> Iterator[Path]:
    before = Path.cwd()
    os.chdir(tmp_path)
    try:
        (tmp_path / "exp.yaml").write_text(EXPERIMENT, encoding="utf-8")
        yield tmp_path
    finally:
        os.chdir(before)


def results(folder: Path) -> int:
    return sum(len((p / "results.jsonl").read_text().splitlines()) for p in folder.rglob("seed-*"))


def test_an_experiment_runs_every_cell_and_continues(here: Path) -> None:
    assert main(["run", "exp.yaml", "--quiet"]) == 0
    out = here / "transcripts" / "grid"
    manifest = json.loads((out / "experiment.json").read_text())
    assert [(c["arm"], c["seed"], c["status"]) for c in manifest["cells"]] == [
        ("direct", 0, "completed"), ("direct", 1, "completed"), ("debate", 0, "completed"), ("debate", 1, "completed")]
    assert (out / "debate" / "demo-stance" / "scripted" / "seed-1" / "run.json").is_file()
    assert results(out) == 32
    assert main(["run", "exp.yaml", "--quiet"]) == 0 and results(out) == 32  # continued: nothing redone
    (here / "exp.yaml").write_text(EXPERIMENT.replace("repeats: 2", "repeats: 3"), encoding="utf-8")
    assert main(["run", "exp.yaml", "--quiet"]) == 0 and results(out) == 48  # only the new repeat ran


def test_a_changed_arm_is_refused_with_nothing_written(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "exp.yaml", "--quiet"]) == 0
    manifest = (here / "transcripts" / "grid" / "experiment.json").read_text()
    (here / "exp.yaml").write_text(EXPERIMENT.replace("rounds: 1", "rounds: 2"), encoding="utf-8")
    capsys.readouterr()
    assert main(["run", "exp.yaml", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "arm 'debate' changed since its cells ran" in err and len(err.strip().splitlines()) == 1
    assert (here / "transcripts" / "grid" / "experiment.json").read_text() == manifest


def test_plan_calls_no_model_and_writes_nothing(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "exp.yaml", "--plan"]) == 0
    shown = capsys.readouterr().out
    assert "| direct/demo-stance/scripted/seed-0 | 8 | 0 | 8 |" in shown  # one call per item
    assert "| debate/demo-stance/scripted/seed-1 | 8 | 0 | 32 |" in shown  # 2 agents x 2 rounds
    # before any unit ran, tokens are estimated (~): a dry run's prompts, completions at the generation bound
    from moot.scenario.load import load_scenario
    from moot.scenario.bundled import find_scenario

    bound = load_scenario(find_scenario("cola_direct")).generation.max_tokens
    direct = next(line for line in shown.splitlines() if line.startswith("| direct/demo-stance/scripted/seed-0 "))
    prompt, completion = direct.split(" | ")[5:7]
    assert prompt.startswith("~") and int(prompt[1:]) > 8 * 20 and completion == f"~{8 * bound}", direct
    assert "4 cells, 32 units (0 done), 80 model calls (0 of them cached) and ~" in shown
    assert "at 4 characters a token (a rule of thumb, no tokenizer" in shown
    assert sorted(p.name for p in here.iterdir()) == ["exp.yaml"]
    assert main(["run", "exp.yaml", "--quiet", "--limit", "2", "--repeat", "1"]) == 0
    capsys.readouterr()
    assert main(["run", "exp.yaml", "--plan", "--price", "1", "2"]) == 0
    after = capsys.readouterr().out
    assert "| direct/demo-stance/scripted/seed-0 | 8 | 2 | 6 | 0 |" in after  # 2 done: their usage gives tokens per unit
    direct = next(line for line in after.splitlines() if line.startswith("| direct/demo-stance/scripted/seed-0 "))
    assert "~" not in direct and "tokens left, cost" in after


def test_plan_counts_the_calls_an_interrupted_unit_left_in_the_cache(here: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A unit that stopped before its result (here: its result row removed) is redone from the
    calls it recorded: --plan counts them as cached, and the rerun makes no new call for them."""
    assert main(["run", "exp.yaml", "--quiet", "--repeat", "1"]) == 0
    cell = here / "transcripts" / "grid" / "debate" / "demo-stance" / "scripted" / "seed-0"
    rows = (cell / "results.jsonl").read_text().splitlines()
    (cell / "results.jsonl").write_text("\n".join(rows[:5]) + "\n")
    capsys.readouterr()
    assert main(["run", "exp.yaml", "--plan", "--repeat", "1"]) == 0
    shown = capsys.readouterr().out
    assert "| debate/demo-stance/scripted/seed-0 | 8 | 5 | 12 | 12 |" in shown  # 3 units x 2 agents x 2 rounds
    assert "12 model calls (12 of them cached)" in shown

def test_shards_reported_together_equal_one_run(here: Path) -> None:
    assert main(["run", "exp.yaml", "--quiet", "--out", "one"]) == 0
    for shard in ("1/2", "2/2"):
        assert main(["run", "exp.yaml", "--quiet", "--out", "many", "--shard", shard]) == 0
    first, second = results(here / "many" / "shard-1-of-2"), results(here / "many" / "shard-2-of-2")
    assert first > 0 and second > 0 and first + second == results(here / "one")
    assert main(["report", "one", "--out", "r1"]) == 0
    assert main(["report", "many/shard-1-of-2", "many/shard-2-of-2", "--out", "r2"]) == 0
    written = sorted(p.name for p in (here / "r1").glob("*.csv"))
    assert written and written == sorted(p.name for p in (here / "r2").glob("*.csv"))
    for name in written:
        assert (here / "r1" / name).read_text() == (here / "r2" / name).read_text()
    assert main(["report", "many", "--out", "r3"]) == 0  # the shards' parent folder reads as its shards
    assert (here / "r3" / "published.csv").read_text() == (here / "r1" / "published.csv").read_text()
    assert "Shards missing" not in (here / "r2" / "experiment.md").read_text()


def test_a_report_on_one_shard_names_the_shards_missing_with_the_command_that_runs_each(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "exp.yaml", "--quiet", "--out", "many", "--shard", "2/3"]) == 0
    capsys.readouterr()
    assert main(["report", "many/shard-2-of-3", "--out", "r"]) == 0
    shown, written = capsys.readouterr().out, (here / "r" / "experiment.md").read_text()
    for line in ("1/3 missing: moot run exp.yaml --shard 1/3 --out many",
                 "3/3 missing: moot run exp.yaml --shard 3/3 --out many"):
        assert f"  {line}\n" in shown and f"    {line}\n" in written  # a code block in experiment.md
    assert "2/3" not in shown.split("Shards not done")[1]


def test_failed_and_unfinished_shards_are_named_and_their_commands_continue_them(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A shard with a failed cell and one killed before its last cell (their manifests as such runs
    leave them): each is named with the command it ran with; that command completes it."""
    assert main(["run", "exp.yaml", "--quiet", "--out", "many", "--shard", "1/2", "--repeat", "1",
                 "--model", "scripted:BASE"]) == 0
    assert main(["run", "exp.yaml", "--quiet", "--out", "many", "--shard", "2/2", "--repeat", "1"]) == 0
    for shard, cell, status in (("1-of-2", 0, "failed"), ("2-of-2", -1, "planned")):
        path = here / "many" / f"shard-{shard}" / "experiment.json"
        manifest = json.loads(path.read_text())
        manifest["cells"][cell]["status"] = status
        path.write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["report", "many", "--out", "r"]) == 0
    shown = capsys.readouterr().out
    failed = "moot run exp.yaml --shard 1/2 --out many --repeat 1 --model scripted:BASE"
    unfinished = "moot run exp.yaml --shard 2/2 --out many --repeat 1"
    assert f"1/2 failed (1 of 2 cells): {failed}\n" in shown, shown
    assert f"2/2 unfinished (1 of 2 cells): {unfinished}\n" in shown, shown
    assert main(unfinished.split()[1:] + ["--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", "many", "--out", "r"]) == 0
    shown = capsys.readouterr().out
    assert "2/2" not in shown.split("Shards not done")[1] and "1/2 failed" in shown
    assert main(failed.split()[1:] + ["--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", "many", "--out", "r"]) == 0
    assert "Shards not done" not in capsys.readouterr().out


def test_a_shards_command_repeats_its_cost_limit_and_batch_but_not_the_files_own_limit(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--batch is set in the manifest as a batched run leaves it (the scripted model has no batch API)."""
    assert main(["run", "exp.yaml", "--quiet", "--out", "many", "--shard", "1/2", "--max-cost", "2.5"]) == 0
    path = here / "many" / "shard-1-of-2" / "experiment.json"
    manifest = json.loads(path.read_text())
    assert (manifest["max_cost"], manifest["batch"]) == (2.5, False)
    path.write_text(json.dumps({**manifest, "batch": True}))
    capsys.readouterr()
    assert main(["report", "many", "--out", "r"]) == 0
    assert "2/2 missing: moot run exp.yaml --shard 2/2 --out many --max-cost 2.5 --batch\n" in capsys.readouterr().out
    (here / "exp.yaml").write_text(EXPERIMENT + "max_cost: 2.5\n", encoding="utf-8")
    assert main(["report", "many", "--out", "r"]) == 0
    assert "2/2 missing: moot run exp.yaml --shard 2/2 --out many --batch\n" in capsys.readouterr().out


def test_a_shards_plan_counts_each_cells_own_share(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each cell's share of a shard is its own (the hash names the cell): once the shard ran, its
    plan shows every cell done."""
    assert main(["run", "exp.yaml", "--quiet", "--shard", "1/2"]) == 0
    capsys.readouterr()
    assert main(["run", "exp.yaml", "--plan", "--shard", "1/2"]) == 0
    shown = capsys.readouterr().out
    rows = [line.split(" | ") for line in shown.splitlines() if line.startswith("| direct/") or line.startswith("| debate/")]
    assert len(rows) == 4 and all(r[1] == r[2] and r[3] == "0" for r in rows), shown


def test_a_first_round_majority_arm_is_read_from_saved_runs(here: Path) -> None:
    from moot.experiment.report import first_round_majority, load

    assert main(["run", "exp.yaml", "--quiet"]) == 0
    out = here / "transcripts" / "grid"
    assert not (out / "first-round").exists()  # it runs nothing
    loaded = load([out])
    assert loaded.arms == ["direct", "debate", "first-round"]
    debate = {c.seed: c for c in loaded.cells if c.arm == "debate"}
    derived = {c.seed: c for c in loaded.cells if c.arm == "first-round"}
    assert sorted(derived) == [0, 1] and derived[0].gold == debate[0].gold
    rows = [json.loads(line) for line in (out / "debate/demo-stance/scripted/seed-0/results.jsonl").read_text().splitlines()]
    parsed = {r["id"]: [[None if a == "unparsed" else a for a in rnd] for rnd in r["answers"]] for r in rows}
    assert {i: first_round_majority(a) for i, a in parsed.items()} == dict(derived[0].pred)
    assert first_round_majority([["favor", "against"]]) is None and first_round_majority([["favor", None, "favor"]]) == "favor"


def test_the_report_puts_the_published_figures_beside(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "exp.yaml", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", "transcripts/grid", "--out", "rep"]) == 0
    shown = capsys.readouterr().out
    assert "COLA/Table 2" in shown and "no column measured here" in shown  # demo data: no paper column
    assert "Not measured here" in (here / "rep" / "published.md").read_text() and "HC, FM" in (here / "rep" / "published.md").read_text()
    assert (here / "rep" / "published.tex").read_text().startswith(r"\begin{table}")
    plots = sorted(p.name for p in (here / "rep" / "plots").iterdir())
    assert "arms-demo-stance-all-accuracy-scripted.png" in plots and "arms-demo-stance-all-accuracy-scripted.svg" in plots
    assert "dynamics-demo-stance-scripted.svg" in plots  # the debate arm's rounds
    dynamics = (here / "rep" / "dynamics-demo-stance-scripted.csv").read_text().splitlines()
    assert dynamics[0].startswith("arm,round,accuracy") and [line.split(",")[:2] for line in dynamics[1:]] == [
        ["debate", "0"], ["debate", "1"]]


def test_every_published_row_names_the_model_each_model_its_rows(here: Path) -> None:
    """A dataset that is the paper's VAST, run on two models: each model's cells have their rows,
    each naming the model measured beside the paper's."""
    spec = (ROOT / "datasets" / "demo-stance.yaml").read_text(encoding="utf-8")
    data = ROOT / "datasets" / "demo" / "demo_stance.jsonl"
    (here / "vastlike.yaml").write_text(spec.replace("path: demo/demo_stance.jsonl", f"path: {data}")
                                        + "benchmark: vast\n", encoding="utf-8")
    (here / "two.yaml").write_text(
        "experiment: two\narms:\n  - {name: direct, scenario: cola_direct}\ndatasets: [vastlike.yaml]\n"
        "models: [scripted, 'scripted:AGREEMENT']\nlimit: 3\n"
        "published: {table: COLA/Table 2, rows: {direct: GPT-3.5}}\n", encoding="utf-8")
    assert main(["run", "two.yaml", "--quiet"]) == 0
    assert main(["report", "transcripts/two", "--out", "rep"]) == 0
    rows = (here / "rep" / "published.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith("paper_row,paper_model,arm,measured_model,column,measured,mark,ci_low,ci_high,ci_flags,")
    assert [r.split(",")[:5] for r in rows[1:]] == [["GPT-3.5", "gpt-3.5-turbo", "direct", "scripted", "VAST"],
                                                   ["GPT-3.5", "gpt-3.5-turbo", "direct", "scripted:AGREEMENT", "VAST"]]


def test_a_batch_of_variants_gets_its_own_default_folder() -> None:
    """`moot run drug_policy --vary seed=1,2` after `moot run drug_policy` runs in a folder of its own
    instead of meeting the single run's folder (and refusing it as another run)."""
    from moot.api.running import default_out

    single = default_out(Path("drug_policy.yaml"), None)
    batch = default_out(Path("drug_policy.yaml"), None, ["seed=1,2"])
    assert single == Path("transcripts/drug_policy") and batch == Path("transcripts/drug_policy-seed-1-2")
    assert default_out(Path("cola.yaml"), Path("datasets/vast.yaml")) == Path("transcripts/cola-vast")
    assert default_out(Path("d.yaml"), None, ["model=openai:gpt-4o", "seed=3"]) == Path("transcripts/d-model-openai-gpt-4o-seed-3")


def test_conference_arms_report_their_measures_over_seeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp.yaml").write_text("experiment: conf\narms:\n  - {name: judge, scenario: drug_policy}\n"
                                       "  - {name: no-judge, scenario: drug_policy_no_judge}\nmodels: [scripted]\n"
                                       "repeats: 2\ncompare: {reference: judge}\n", encoding="utf-8")
    assert main(["run", "exp.yaml", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", "transcripts/conf", "--out", "rep"]) == 0
    shown = capsys.readouterr().out
    assert "**rounds_to_agreement · scripted**" in shown and "| no-judge | scripted | 2 |" in shown
    assert (tmp_path / "rep" / "measure-coverage-scripted.tex").is_file()
    # trajectories over seeds: the judge's verdict per topic and round, coverage per topic
    verdicts = (tmp_path / "rep" / "trajectory-judge_agreement-scripted.csv").read_text().splitlines()
    assert verdicts[0] == "line,round,seeds,mean,ci_low,ci_high,ci_flags" and verdicts[1].startswith("judge · topic 0,1,2,")
    assert not any(line.startswith("no-judge") for line in verdicts)  # no judge, no verdict
    coverage = (tmp_path / "rep" / "trajectory-coverage_by_topic-scripted.csv").read_text().splitlines()
    assert {line.split(" · ")[0] for line in coverage[1:]} == {"judge", "no-judge"}
    assert (tmp_path / "rep" / "plots" / "trajectory-judge_agreement-scripted.svg").is_file()


def test_judge_decisions_graded_after_each_conference_give_table_5(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The experiment's `score:` re-runs the grader on each finished conference (on the cell's model
    with --model); the report reads the graded copy and prints Heller et al. Table 5 with its
    published column and delta; running again grades nothing twice."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t5.yaml").write_text(
        "experiment: t5\narms:\n  - {name: g, scenario: drug_policy_paper, set: {models.judge: 'ollama:gemma2:9b'}}\n"
        "  - {name: m, scenario: drug_policy_paper, set: {models.judge: 'ollama:mixtral:8x7b'}}\n"
        "score: {grader: 'openai:gpt-4'}\ncompare: {reference: g}\n"
        "published: {table: Heller/Table 5, rows: {g: Gemma 2 9B, m: Mixtral 8x7B}}\n", encoding="utf-8")
    assert main(["run", "t5.yaml", "--model", "scripted"]) == 0
    ran = capsys.readouterr().out
    assert "g/-/scripted/seed-42: re-scored (grader=scripted): completed" in ran
    manifest = json.loads((tmp_path / "transcripts/t5/experiment.json").read_text())
    assert manifest["score"] == {"grader": "openai:gpt-4"}
    assert [(c["scored"], c["scored_folder"]) for c in manifest["cells"]][0] == (
        "completed", "g/scenario/scripted/seed-42-scored-grader-scripted")
    graded = tmp_path / "transcripts/t5/g/scenario/scripted/seed-42-scored-grader-scripted"
    assert json.loads((graded / "run.json").read_text())["rescored"]["roles"] == {"grader": "scripted"}
    assert main(["report", "transcripts/t5", "--out", "rep"]) == 0
    shown = capsys.readouterr().out
    # the scripted grader gives every decision 7: Gemma 2 9B's first decision is published as 8
    # every arm ran on the scripted model (--model): the measured model says so beside the paper's
    assert "| Gemma 2 9B | Gemma 2 9B | g | scripted | Debate 1 | 7.00 | one repeat: no interval | – | 1 | 8 | -1.00 |" in shown, shown
    assert "| Mixtral 8x7B | Mixtral 8x7B | m | scripted | Overall | 7.00 | one repeat: no interval | – | 1 | 2 | +5.00 |" in shown
    assert "**judge_grade · scripted**" in shown
    assert (tmp_path / "rep" / "trajectory-judge_grades-scripted.csv").is_file()
    before = graded.joinpath("run.json").stat().st_mtime_ns
    assert main(["run", "t5.yaml", "--model", "scripted", "--quiet"]) == 0
    assert graded.joinpath("run.json").stat().st_mtime_ns == before  # graded once



def test_another_grader_is_another_graded_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = ("experiment: g\narms:\n  - {name: g, scenario: drug_policy_paper, set: {models.default: scripted}}\n"
            "score: {grader: scripted}\n")
    (tmp_path / "g.yaml").write_text(text, encoding="utf-8")
    assert main(["run", "g.yaml", "--quiet"]) == 0
    (tmp_path / "g.yaml").write_text(text.replace("grader: scripted", "grader: 'scripted:BASE'"), encoding="utf-8")
    assert main(["run", "g.yaml", "--quiet"]) == 0  # the conference is not run again; its grading is
    cell = json.loads((tmp_path / "transcripts/g/experiment.json").read_text())["cells"][0]
    assert (cell["scored"], cell["scored_folder"]) == ("completed", "g/scenario/default/seed-42-scored-grader-scripted_BASE")
    assert (tmp_path / "transcripts/g/g/scenario/default/seed-42-scored-grader-scripted/run.json").is_file()  # kept


def test_compare_pairs_two_runs_on_their_shared_items(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(ROOT / "datasets" / "demo-stance.yaml")
    # The scripted model writes no chain of thought: every cola_cot answer is unparsed (exit 4, results kept).
    for scenario, limit, code in (("cola_direct", "12", 0), ("cola_cot", "8", EXIT_UNPARSED)):
        assert main(["run", scenario, "--dataset", data, "--model", "scripted", "--limit", limit, "--quiet",
                     "--out", f"run-{scenario}"]) == code
    capsys.readouterr()
    assert main(["compare", "run-cola_direct", "run-cola_cot", "--metric", "accuracy", "--out", "cmp"]) == 0
    shown = capsys.readouterr().out
    assert "| A: run-cola_direct | scripted | 1 | 12 |" in shown and "(bootstrap)" in shown
    assert "paired 8 units; dropped 4 without their pair" in shown
    assert (here / "cmp" / "compare.tex").is_file()
    other = here / "other.jsonl"
    other.write_text('{"id": "zzz", "text": "t", "target": "x", "label": "favor"}\n', encoding="utf-8")
    (here / "other.yaml").write_text("path: other.jsonl\nformat: jsonl\ncolumns: {id: id, text: text, target: target, "
                                     "label: label}\nlabels: {favor: favor, against: against, neutral: neutral}\n",
                                     encoding="utf-8")
    assert main(["run", "cola_direct", "--dataset", "other.yaml", "--model", "scripted", "--quiet", "--out", "o"]) == 0
    capsys.readouterr()
    assert main(["compare", "o", "run-cola_cot"]) == 2
    assert "ran on different datasets (other, sha256" in capsys.readouterr().err  # refused before pairing
