"""The API functions the command line's commands call (issue 30, 5), called as a notebook would:
replaying a saved unit and listing a batch (`moot replay`), what ships with moot (`moot run --list`),
a protocol's own command (`moot judge-eval`), a blind rating session (`moot annotate`), seats, a
run's end as the command line prints it (`moot run`), an experiment's plan and the grid a scenario
with repeats stands for (`moot run ... --plan`, `--repeat`)."""

from __future__ import annotations

import argparse
import io
import json
import re
import shutil
from pathlib import Path

import pytest

import moot
from moot.api.seats import seat_specs
from moot.errors import UsageError
from moot.log.events import Message
from moot.scenario.bundled import bundled_dir, datasets_dir, experiments_dir

ROOT = Path(__file__).resolve().parents[1]
STANCE = ROOT / "datasets" / "demo-stance.yaml"


@pytest.fixture(scope="module")
def items(tmp_path_factory) -> Path:
    """Four items of the demo stance set through COLA on the scripted model."""
    out = tmp_path_factory.mktemp("runs") / "cola"
    assert moot.run("cola", dataset=STANCE, limit=4, models="scripted", out=out).status == "completed"
    return out


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> Path:
    """Two conferences (seeds 1, 2) on the scripted model."""
    out = tmp_path_factory.mktemp("runs") / "conferences"
    assert moot.run("drug_policy", models="scripted", vary={"seed": [1, 2]}, out=out).status == "completed"
    return out


def rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()]


# --- moot replay ---------------------------------------------------------------------------------

def test_a_batch_lists_each_unit_with_how_it_ended(batch, items, tmp_path):
    assert moot.unit_states(batch) == [("seed-1", "completed"), ("seed-2", "completed")]
    assert moot.unit_states(items) == [(r["id"], f"stance: {r['prediction']} (gold {r['gold']})") for r in rows(items)]
    cut = shutil.copytree(items, tmp_path / "cut")  # the last unit's row lost: its transcript says how it ended
    last = rows(cut)[-1]
    (cut / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows(cut)[:-1]), encoding="utf-8")
    unit, state = moot.unit_states(cut)[-1]
    right = "right" if last["prediction"] == last["gold"] else "wrong"
    assert unit == last["id"] and state.startswith(f"prediction: {last['prediction']} (gold {last['gold']}, {right})")


def test_a_unit_replays_at_its_recorded_pace(batch):
    replay = moot.open_replay(batch, unit="seed-1")
    latencies = [e.latency_s for e in replay.transcript.events if isinstance(e, Message) and e.latency_s > 0]
    waits: list[float] = []
    out = io.StringIO()
    replay.play(out, speed=4.0, color=False, sleep=waits.append)
    assert latencies and waits == [latency / 4.0 for latency in latencies]
    text = out.getvalue()
    assert text.startswith(f"Replay of {replay.transcript.path}: run ") and "unit seed-1" in text.splitlines()[0]
    assert "\x1b" not in text and "Stop: completed" in text
    waits.clear()
    replay.play(io.StringIO(), speed=None, sleep=waits.append)
    assert waits == []


def test_a_replay_of_one_part_and_what_it_refuses(batch):
    replay = moot.open_replay(batch, unit="seed-2")
    assert replay.parts >= 2
    out = io.StringIO()
    replay.play(out, speed=None, part=2)
    assert f"=== Topic 2/{replay.parts}" in out.getvalue() and "=== Topic 1/" not in out.getvalue()
    with pytest.raises(UsageError, match=f"part {replay.parts + 1}: "):
        replay.play(io.StringIO(), part=replay.parts + 1)
    with pytest.raises(UsageError, match="2 units; name one"):
        moot.open_replay(batch)
    with pytest.raises(moot.MootError, match="no unit 'seed-3'"):
        moot.open_replay(batch, unit="seed-3")


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


# --- moot annotate -------------------------------------------------------------------------------

class Rater:
    """A rater answering from a list, who leaves when it runs out."""

    def __init__(self, answers: list[str]):
        self.answers, self.revealed_count, self.todo = list(answers), 0, None

    async def ask(self, asking, question, problem) -> str:
        if not self.answers:
            raise moot.PersonLeft("no more answers")
        return self.answers.pop(0)

    def begin(self, todo) -> None:
        self.todo = todo

    def revealed(self, done, number, count) -> None:
        self.revealed_count += 1


def test_an_annotation_session_keeps_each_rating_and_goes_on_where_it_stopped(items, tmp_path):
    run = shutil.copytree(items, tmp_path / "rated")
    first = Rater(["favor", "against"])
    todo = moot.annotate(run, first, rater="ann", limit=2)
    assert todo.rater == "ann" and todo.before == 0 and len(todo.things) == 2 and first.revealed_count == 2
    kept = [json.loads(line) for line in (run / "annotations.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(kept) == 2 and all(k["rater"] == "ann" for k in kept)
    leaving = Rater([])
    with pytest.raises(moot.PersonLeft):
        moot.annotate(run, leaving, rater="ann")
    assert leaving.todo.before == 2  # what was rated is skipped
    assert len((run / "annotations.jsonl").read_text(encoding="utf-8").splitlines()) == 2
    with pytest.raises(UsageError, match="annotate a run folder"):
        moot.annotate(run / rows(run)[0]["transcript"], Rater([]))


# --- seats ---------------------------------------------------------------------------------------

def test_seats_as_the_command_line_spells_them():
    assert seat_specs(["judge", "participants:30", "moderator:5:skip"]) == (
        moot.SeatSpec("judge"), moot.SeatSpec("participants", 30.0, "model"), moot.SeatSpec("moderator", 5.0, "skip"))
    with pytest.raises(UsageError, match="the fallback must be one of"):
        seat_specs(["judge:5:later"])


# --- the end of a run ----------------------------------------------------------------------------

def test_a_batchs_end_as_the_command_line_prints_it(tmp_path):
    prepared = moot.prepare("cola", dataset=STANCE, limit=3, models="scripted", out=tmp_path / "r")
    result = prepared.run()
    out, err = io.StringIO(), io.StringIO()
    moot.show_end(prepared, result, out, err)
    lines = out.getvalue().splitlines()
    unparsed = sum(1 for r in rows(tmp_path / "r") if r["prediction"] == "unparsed")
    assert lines[-1] == (f"run: {tmp_path / 'r'} items=3 backend_calls={result.stats.backend_calls} "
                         f"cache_hits={result.stats.cache_hits} unparsed={unparsed}")
    assert lines[-2] == f"results: {tmp_path / 'r' / 'results.jsonl'}"
    assert result.metric and result.metric in out.getvalue() and err.getvalue() == ""


def test_one_units_end_names_its_transcript(tmp_path):
    inputs = {"text": "Online classes are a drag. SCRIPTED_LABEL=against", "target": "online classes"}
    prepared = moot.prepare("cola", inputs=inputs, models="scripted", out=tmp_path / "one")
    result = prepared.run()
    out = io.StringIO()
    moot.show_end(prepared, result, out, io.StringIO())
    (row,) = rows(tmp_path / "one")
    assert f"transcript: {tmp_path / 'one' / row['transcript']}" in out.getvalue()
    assert "stance: against" in out.getvalue()


# --- experiments ---------------------------------------------------------------------------------

def test_a_scenario_with_repeats_is_an_experiment_planned_before_it_runs(tmp_path):
    assert moot.is_grid("cola", repeats=2) and not moot.is_grid("drug_policy", ["seed=1,2"])
    experiment, out = moot.grid_of("cola", dataset="demo-stance", repeats=2, limit=2, out=tmp_path / "grid")
    assert out == tmp_path / "grid" and not out.exists()
    lines = moot.plan_lines(experiment, out=out)
    cells = [line for line in lines if line.startswith("| ") and not line.startswith("| cell")]
    assert len(cells) == 2 and all(line.split(" | ")[1:3] == ["2", "0"] for line in cells)
    assert "2 cells, 4 units (0 done)" in "\n".join(lines) and not out.exists()
    assert moot.parse_shard("2/3") == (2, 3)
    with pytest.raises(UsageError):
        moot.parse_shard("4/3")
