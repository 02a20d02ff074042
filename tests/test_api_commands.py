"""The API functions the command line's commands call (issue 30, 5), called as a notebook would:
what ships with moot (`moot run --list`), a protocol's own command (`moot judge-eval`)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

import moot
from moot.errors import UsageError
from moot.scenario.bundled import bundled_dir, datasets_dir, experiments_dir

def rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()]


# --- moot run --list -----------------------------------------------------------------------------

def test_what_ships_is_listed_by_name():
    scenarios = {s.name: s for s in moot.bundled_scenarios()}
    assert set(scenarios) == {p.stem for p in bundled_dir().glob("*.yaml")}
    assert scenarios["drug_policy"].protocol == "conference" and scenarios["cola"].protocol == "cola"
    assert all(s.title for s in scenarios.values())
    assert {e.name for e in moot.bundled_experiments()} == {p.stem for p in experiments_dir().glob("*.yaml")}
    demos = {d.name: d for d in moot.demo_sets()}
    assert set(demos) == {p.stem for p in datasets_dir().glob("demo-*.yaml")}
    lines = (datasets_dir() / "demo" / "demo_stance.jsonl").read_text(encoding="utf-8").splitlines()
    stance = demos["demo-stance"]
    assert stance.items == len(lines) and set(stance.labels) == {json.loads(line)["label"] for line in lines}


def test_moot_run_list_prints_each_of_them(capsys):
    from moot.cli import main

    assert main(["run", "--list"]) == 0
    out = capsys.readouterr().out
    for s in moot.bundled_scenarios():
        assert re.search(rf"^  {re.escape(s.name)} +{re.escape(s.protocol)} +{re.escape(s.title)}$", out, re.M), s
    for d in moot.demo_sets():
        assert re.search(rf"^  {d.name} +{d.items} items, labels {' / '.join(d.labels)}$", out, re.M), d


# --- a protocol's own command ----------------------------------------------------------------------

def test_a_protocol_command_prepares_the_run_it_stands_for(tmp_path, monkeypatch):
    command = moot.protocol_commands()["judge-eval"]
    parser = argparse.ArgumentParser()
    command.options(parser)
    arguments = parser.parse_args(["--task", "stance"])
    prepared = moot.prepare_command("judge-eval", arguments, "demo-stance", limit=3, models="scripted",
                                    out=tmp_path / "judge")
    assert prepared.planned == 3 and prepared.out == tmp_path / "judge" and not prepared.out.exists()
    result = prepared.run()
    assert result.status == "completed" and result.done == 3 and len(rows(tmp_path / "judge")) == 3
    monkeypatch.chdir(tmp_path)
    default = moot.prepare_command("judge-eval", arguments, "demo-stance", models="scripted")
    assert default.out.parent == Path("transcripts") and default.planned > 3
    with pytest.raises(UsageError, match="did you mean 'judge-eval'"):
        moot.prepare_command("judge-evl", arguments, "demo-stance")


