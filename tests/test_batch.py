"""COLA over a dataset: results as items finish, metrics, resume without repeated calls."""

from __future__ import annotations

import json

import pytest
from protocol_fakes import TaggingClient

from moot.cli import main
from moot.cli.run import run as run_command
from moot.engine.folder import RunFolder, RunFolderError
from moot.engine.meta import check_identity

ROWS = [("I love remote school, no commute!", "online classes", "1"),
        ("Remote school is a disaster for kids.", "online classes", "0"),
        ("Schools reopen on Monday.", "online classes", "2"),
        ("Taxes fund roads.", "taxes", "2"),
        ("Cut taxes now!", "taxes", "0")]


@pytest.fixture
def files(tmp_path):
    data = tmp_path / "tiny.csv"
    lines = ["Tweet,Target,Stance"] + [f'"{t}",{g},{s}' for t, g, s in ROWS]
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = tmp_path / "tiny.yaml"
    spec.write_text("path: tiny.csv\nformat: csv\ncolumns: {text: Tweet, target: Target, label: Stance}\n"
                    'labels: {"0": against, "1": favor, "2": neutral}\n', encoding="utf-8")
    scenario = tmp_path / "cola.yaml"
    # the JSON judger: the scripted model answers its structured stance (the default option
    # judger's free text carries no label for it)
    scenario.write_text("protocol: cola\nmodels: {default: scripted}\njudger: {output: json}\n", encoding="utf-8")
    return scenario, spec, tmp_path / "run"


def cli(capsys, *argv) -> list[str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0, out
    return out


def test_dataset_run_prints_metrics_and_run_line_then_resumes_with_zero_calls(files, capsys):
    scenario, spec, out = files
    lines = cli(capsys, scenario, "--dataset", spec, "--limit", 4, "--concurrency", 3, "--out", out)
    assert lines[-1] == f"run: {out} items=4 backend_calls=28 cache_hits=0 unparsed=0"
    assert lines[0].startswith("macro_f1=") and any(line.startswith("f_avg=") for line in lines)
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == ["0", "1", "2", "3"]
    assert {r["gold"] for r in rows} == {"favor", "against", "neutral"}
    assert all((out / r["transcript"]).is_file() for r in rows)  # relative to the run folder
    again = cli(capsys, scenario, "--dataset", spec, "--limit", 4, "--out", out, "--resume")
    assert again[-1] == f"run: {out} items=4 backend_calls=0 cache_hits=0 unparsed=0"
    more = cli(capsys, scenario, "--dataset", spec, "--out", out)  # one new item only
    assert more[-1] == f"run: {out} items=5 backend_calls=7 cache_hits=0 unparsed=0"


def test_item_cut_short_is_rerun_from_the_cache(files, capsys):
    scenario, spec, out = files
    cli(capsys, scenario, "--dataset", spec, "--limit", 2, "--out", out)
    results = out / "results.jsonl"
    first, second = results.read_text().splitlines()
    results.write_text(first + "\n" + second[:10])  # killed while writing the second result
    lines = cli(capsys, scenario, "--dataset", spec, "--limit", 2, "--out", out)
    # the item's own transcript says it finished: its result comes back without a call
    assert lines[-1] == f"run: {out} items=2 backend_calls=0 cache_hits=0 unparsed=0"
    rows = results.read_text().splitlines()  # the torn row is set aside; the next starts on its own line
    assert [json.loads(r)["id"] for r in rows] == [json.loads(first)["id"], json.loads(second)["id"]]
    assert (out / "results.jsonl.torn").read_text() == second[:10] + "\n"


def test_failed_item_is_reported_and_retried_by_the_next_run(files, capsys):
    scenario, spec, out = files
    scenario.write_text(scenario.read_text() + "retry: {attempts: 1, backoff_s: 0}\n")
    argv = [str(scenario), "--dataset", str(spec), "--limit", "2", "--out", str(out)]
    assert run_command(argv, {"scripted": TaggingClient(fail_judge=1)}) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1] == f"run: {out} items=1 backend_calls=14 cache_hits=0 unparsed=0 failed=1"
    assert "failed: error: ConnectionError: judge backend down" in captured.err
    assert run_command(argv, {"scripted": TaggingClient()}) == 0
    # only the failed judger call is sent again; its item's other calls come back from its own log
    assert capsys.readouterr().out.splitlines()[-1] == f"run: {out} items=2 backend_calls=1 cache_hits=0 unparsed=0"


def test_concurrency_bounds_calls_in_flight_across_items(files, capsys):
    scenario, spec, out = files
    client = TaggingClient(delay=0.02)
    argv = [str(scenario), "--dataset", str(spec), "--out", str(out), "--concurrency", "3", "--quiet"]
    assert run_command(argv, {"scripted": client}) == 0
    assert client.peak == 3 and len(client.prompts) == 35


def test_run_folder_of_another_scenario_is_refused(tmp_path):
    with RunFolder(tmp_path / "run") as folder:
        check_identity(folder, {"scenario_sha256": "a", "dataset_sha256": "b"}, {})
        check_identity(folder, {"scenario_sha256": "a", "dataset_sha256": "b"}, {})
        with pytest.raises(RunFolderError, match="holds a run with another scenario; choose another --out"):
            check_identity(folder, {"scenario_sha256": "c", "dataset_sha256": "b"}, {})
        with pytest.raises(RunFolderError, match="holds a run with another dataset"):
            check_identity(folder, {"scenario_sha256": "a", "dataset_sha256": "x"}, {})


def test_a_run_folder_is_owned_by_one_process_at_a_time(tmp_path):
    with RunFolder(tmp_path / "run"):
        with pytest.raises(RunFolderError, match="in use by another moot process"):
            with RunFolder(tmp_path / "run"):
                pass
    with RunFolder(tmp_path / "run"):  # released when its holder is done
        pass


def test_dataset_label_outside_the_label_set_is_an_input_error(files, capsys):
    scenario, spec, out = files
    spec.write_text(spec.read_text().replace("neutral}", "none}"), encoding="utf-8")
    assert main([str(scenario), "--dataset", str(spec), "--out", str(out)]) == 2
    assert "label 'none' of item 2 is not one of the scenario's labels" in capsys.readouterr().err


def test_one_item_prints_every_contribution_and_the_stance(files, capsys, tmp_path):
    scenario, _, _ = files
    out = tmp_path / "one"
    lines = cli(capsys, scenario, "--input", "text=Cats rule.", "--input", "target=cats", "--out", out)
    text = "\n".join(lines)
    for role in ("linguist", "domain", "social", "debater_favor", "debater_against", "debater_neutral", "judger"):
        assert f"] {role} (" in text
    assert "stance: favor" in lines
    transcript = next(line for line in lines if line.startswith("transcript: ")).split(": ", 1)[1]
    assert transcript.startswith(f"{out}/item-") and (out / transcript.rsplit("/", 1)[1]).is_file()
    again = cli(capsys, scenario, "--input", "text=Cats rule.", "--input", "target=cats", "--out", out)
    assert again[-1] == f"run: {out} items=1 backend_calls=0 cache_hits=0 unparsed=0"
    other = cli(capsys, scenario, "--input", "text=Dogs rule.", "--input", "target=dogs", "--out", out)
    assert other[-1] == f"run: {out} items=2 backend_calls=7 cache_hits=0 unparsed=0"  # the folder holds both
    assert len(list(out.glob("item-*.jsonl"))) == 2  # two items: two transcripts, never one overwritten
    assert main([str(scenario), "--input", "oops"]) == 2
    assert "--input 'oops': expected KEY=VALUE" in capsys.readouterr().err


def test_options_may_come_before_the_scenario_and_bundled_scenarios_run_by_name(tmp_path, capsys):
    out = tmp_path / "named"
    assert main(["run", "--model", "scripted", "--out", str(out), "--quiet", "cola"]) == 0
    # the option judger's scripted reply names no option: unparsed, kept as it came
    assert capsys.readouterr().out.splitlines()[-1] == f"run: {out} items=1 backend_calls=7 cache_hits=0 unparsed=0"


def test_progress_line_counts_items_calls_tokens_and_unparsed():
    import io

    from moot.api.console import BatchStatus
    from moot.models.engine import EngineStats

    stream = io.StringIO()
    status = BatchStatus(10, 2, EngineStats(backend_calls=5, cache_hits=1, prompt_tokens=30, completion_tokens=12),
                         stream)
    status.done, status.unparsed = 4, 1
    status.show(force=True)
    line = stream.getvalue().splitlines()[-1]
    assert line.startswith("[4/10] ETA ") and "calls=5 cached=1 tokens=42 unparsed=1" in line


def test_a_run_folder_named_like_its_bundled_scenario_is_continued_not_read_as_the_scenario(tmp_path, monkeypatch,
                                                                                             capsys):
    """`moot run cola --out cola` makes a folder `cola`; the same command again continues that run
    (the name still means the bundled scenario, not the folder)."""
    monkeypatch.chdir(tmp_path)
    command = ["run", "cola", "--model", "scripted", "--input", "text=hi", "--input", "target=x", "--out", "cola",
               "--quiet"]
    assert main(command) == 0
    capsys.readouterr()
    assert main(command) == 0, capsys.readouterr().err
    assert "backend_calls=0" in capsys.readouterr().out
