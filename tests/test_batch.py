"""COLA over a dataset: results as items finish, metrics, resume without repeated calls."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from protocol_fakes import TaggingClient

from moot.cli import main
from moot.datasets import iter_items, load_dataset_spec
from moot.models.calls import RetryPolicy
from moot.protocols import cola
from moot.protocols.batch import RunDirError, check_run_dir, run_batch
from moot.models.cache import ReplyCache
from moot.protocols.cola_schema import ColaScenario
from moot.protocols.context import Engine

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
    scenario.write_text("protocol: cola\nmodels: {default: scripted}\n", encoding="utf-8")
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
    assert all(Path(r["transcript"]).is_file() for r in rows)
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
    assert lines[-1] == f"run: {out} items=2 backend_calls=0 cache_hits=7 unparsed=0"


def test_failed_item_is_reported_and_retried_by_the_next_run(files, tmp_path):
    _, spec_path, out = files
    scenario = ColaScenario(protocol="cola", models={"default": "scripted"})
    items = [cola.item_input(scenario, i.id, i.text, i.target, gold=i.label)
             for i in iter_items(load_dataset_spec(spec_path), 2)]

    def batch(client):
        engine = Engine(concurrency=2, cache=ReplyCache(out / "cache.sqlite"), clients={"scripted": client},
                        retry=RetryPolicy(attempts=1, backoff_s=0, timeout_s=5))
        outcome = asyncio.run(run_batch(cola, scenario, Path("s.yaml"), "sha", items, engine, out))
        engine.cache.close()
        return outcome, engine.stats

    outcome, stats = batch(TaggingClient(fail_judge=1))
    assert len(outcome.failed) == 1 and len(outcome.results) == 1
    assert "judge backend down" in outcome.failed[0].cause
    outcome, stats = batch(TaggingClient())
    assert not outcome.failed and len(outcome.results) == 2
    assert (stats.backend_calls, stats.cache_hits) == (1, 6)  # only the failed judger call is sent again


def test_concurrency_bounds_calls_in_flight_across_items(files):
    _, spec_path, out = files
    scenario = ColaScenario(protocol="cola", models={"default": "scripted"})
    items = [cola.item_input(scenario, i.id, i.text, i.target, gold=i.label)
             for i in iter_items(load_dataset_spec(spec_path))]
    client = TaggingClient(delay=0.02)
    engine = Engine(concurrency=3, clients={"scripted": client})
    asyncio.run(run_batch(cola, scenario, Path("s.yaml"), "sha", items, engine, out))
    assert client.peak == 3 and engine.stats.backend_calls == 35


def test_run_dir_of_another_scenario_is_refused(tmp_path):
    check_run_dir(tmp_path, {"scenario_sha256": "a", "dataset_sha256": "b"})
    check_run_dir(tmp_path, {"scenario_sha256": "a", "dataset_sha256": "b"})
    with pytest.raises(RunDirError, match="another scenario_sha256"):
        check_run_dir(tmp_path, {"scenario_sha256": "c", "dataset_sha256": "b"})


def test_dataset_label_outside_the_label_set_is_an_input_error(files, capsys):
    scenario, spec, out = files
    spec.write_text(spec.read_text().replace("neutral}", "none}"), encoding="utf-8")
    assert main([str(scenario), "--dataset", str(spec), "--out", str(out)]) == 2
    assert "label 'none' of item 2 is not one of the scenario's labels" in capsys.readouterr().err


def test_one_item_prints_every_contribution_and_the_stance(files, capsys, tmp_path):
    scenario, _, _ = files
    transcript = tmp_path / "one.jsonl"
    lines = cli(capsys, scenario, "--input", "text=Cats rule.", "--input", "target=cats",
                "--out", transcript, "--cache", tmp_path / "c.sqlite")
    text = "\n".join(lines)
    for role in ("linguist", "domain", "social", "debater_favor", "debater_against", "debater_neutral", "judger"):
        assert f"== {role} (" in text
    assert "stance: favor" in lines and f"transcript: {transcript}" in lines
    assert transcript.is_file()
    assert main([str(scenario), "--input", "oops"]) == 2


def test_the_scenario_is_found_among_options(files):
    from moot.protocols import protocol_in_argv

    scenario, spec, _ = files
    assert protocol_in_argv(["--base-url", "http://x", str(scenario)]) == "cola"
    assert protocol_in_argv(["--dataset", str(spec), str(scenario), "--limit", "2"]) == "cola"
    assert protocol_in_argv(["missing.yaml"]) is None


def test_progress_line_counts_items_calls_tokens_and_unparsed():
    import io

    from moot.protocols.batch import Progress
    from moot.protocols.context import RunStats

    stream = io.StringIO()
    progress = Progress(10, 2, RunStats(backend_calls=5, cache_hits=1, prompt_tokens=30, completion_tokens=12),
                        stream, unparsed=1)
    progress.done = 4
    progress.show()  # not a terminal: only forced lines (one per finished item)
    assert stream.getvalue() == ""
    progress.show(force=True)
    line = stream.getvalue()
    assert line.startswith("[4/10] ETA ") and "calls=5 cached=1 tokens=42 unparsed=1" in line
