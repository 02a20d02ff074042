"""Torture: one bad file must not take down the others (issue 32, class 2). A hand-edited run.json,
results row or experiment.json (a key of the wrong type), a FIFO named like a moot file, a folder
whose name is not UTF-8 and a malformed URL: every reader (report, compare, export, the Python API,
`moot run`, the viewer over HTTP) names the file and key in one line, goes on with the rest, and
never hangs, fails with a traceback or answers 500."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from torture_support import ROOT, assert_clean, case, moot, scripted_batches
from viewer_support import Viewer

import moot as api
from moot.errors import MootError

META = {"models": 5, "labels": "abc", "planned_units": "six", "skipped_rows": [1], "headline_metric": "bogus",
        "rescored": "yes", "scenario_path": 5, "scenario": ["x"], "spend_usd": "lots"}
ROWS = {"gold": {"x": 1}, "prediction": [1], "transcript": 5, "variant": {"seed": [1]}}
CAFE = os.fsdecode(b"caf\xe9")  # a folder name that is not UTF-8


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    return scripted_batches(tmp_path_factory.mktemp("damaged") / "runs", ("a",), ("b",), ("c",))


@pytest.fixture
def runs(made, tmp_path) -> Path:
    shutil.copytree(made, tmp_path / "runs")
    return tmp_path / "runs"


def damage_meta(folder: Path, key: str, value: object) -> None:
    meta = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    (folder / "run.json").write_text(json.dumps({**meta, key: value}), encoding="utf-8")


def damage_row(folder: Path, key: str, value: object) -> None:
    results = folder / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    rows[1][key] = value
    results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def command(name: str, runs: Path) -> list[object]:
    return {"report": ["report", runs / "b", "--out", runs.parent / "rep"],
            "compare": ["compare", runs / "a", runs / "b"],
            "export": ["export", runs / "b", "--out", runs.parent / "b.md"]}[name]


DAMAGES = [("meta", k) for k in sorted(META)] + [("row", k) for k in sorted(ROWS)]


def damage(folder: Path, kind: str, key: str) -> str:
    """`folder` damaged at `key` of its run.json (`meta`) or of its second results row; where the
    one line must say it is."""
    if kind == "meta":
        damage_meta(folder, key, META[key])
        return f"{folder.name}/run.json: key '{key}"
    damage_row(folder, key, ROWS[key])
    return f"{folder.name}/results.jsonl:2: key '{key}"


@pytest.mark.parametrize("kind, key", DAMAGES)
@pytest.mark.parametrize("name", ["report", "compare", "export"])
def test_a_hand_edited_run_json_or_results_row_is_one_line_naming_file_and_key(runs, kind, key, name):
    with case("bad inputs", "one bad file"):
        where = damage(runs / "b", kind, key)
        ran = moot(*command(name, runs))
        assert_clean(ran, 1)
        assert ran.code == 2 and where in ran.err and "internal error" not in ran.err, ran.err


@pytest.mark.parametrize("kind, key", DAMAGES)
def test_the_api_raises_a_moot_error_naming_the_file_and_key(runs, kind, key):
    with case("bad inputs", "one bad file"):
        where = damage(runs / "b", kind, key)
        with pytest.raises(MootError, match=re.escape(where)):
            run = api.open_run(runs / "b")
            run.metrics()
            [unit.transcript() for unit in run.units()]


def test_a_report_of_many_runs_leaves_the_damaged_one_out_in_one_line(runs):
    with case("bad inputs", "one bad file"):
        damage_meta(runs / "b", "models", 5)
        ran = moot("report", runs, "--out", runs.parent / "rep")
        assert_clean(ran, 1)
        assert ran.code == 2 and "left out" in ran.err and "b/run.json: key 'models'" in ran.err
        assert f"{runs / 'a'} (complete" in ran.out and f"{runs / 'c'} (complete" in ran.out
        assert "b/run.json" in (runs.parent / "rep" / "report.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("cell, key", [({"seed": "one"}, "cells[0].seed"), ({"folder": "../../elsewhere"}, "cells[0].folder")])
def test_a_hand_edited_experiment_json_is_one_line_naming_the_key(tmp_path, cell, key):
    with case("bad inputs", "one bad file"):
        entry = {"arm": "x", "dataset": "d", "model": "m", "seed": 1, "folder": "x/d/m/seed-1", **cell}
        (tmp_path / "experiment.json").write_text(json.dumps({"experiment": "e", "cells": [entry]}), encoding="utf-8")
        ran = moot("report", tmp_path, "--out", tmp_path / "rep")
        assert_clean(ran, 1)
        assert ran.code == 2 and f"experiment.json: key '{key}'" in ran.err, ran.err


# --- special files ----------------------------------------------------------------------------
FIFOS = ["a/run.json", "a/results.jsonl", "a/0.jsonl", "a/stray.jsonl", "stray.jsonl"]


def fifo(runs: Path, where: str) -> None:
    (runs / where).unlink(missing_ok=True)
    os.mkfifo(runs / where)


@pytest.mark.parametrize("where", FIFOS)
@pytest.mark.parametrize("name", ["report", "run"])
def test_a_fifo_named_like_a_moot_file_never_hangs_a_command(runs, where, name):
    with case("bad inputs", "one bad file"):
        fifo(runs, where)
        args = (["report", runs, "--out", runs.parent / "rep"] if name == "report" else
                [runs / "cola.yaml", "--dataset", runs / "data.yaml", "--out", runs / "a", "--quiet"])
        done = subprocess.run([sys.executable, "-m", "moot", *map(str, args)], capture_output=True, text=True,
                              timeout=120, cwd=ROOT, stdin=subprocess.DEVNULL)
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
        special = where in FIFOS[:3] and not (name == "run" and where == "a/0.jsonl")  # a finished unit's: not read
        if special:
            assert done.returncode == 2 and "not a regular file" in done.stderr and where in done.stderr, done.stderr
            assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1, done.stderr
        else:
            assert done.returncode == 0, done.stderr


# --- the viewer, over HTTP ---------------------------------------------------------------------
def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")


@pytest.fixture
def served(runs):
    damage_meta(runs / "b", "models", 5)
    damage_row(runs / "c", "gold", {"x": 1})
    shutil.copytree(runs / "a", runs / CAFE)
    fifo(runs, "a/stray.jsonl")
    fifo(runs, "stray.jsonl")
    fifo(runs, f"{CAFE}/0.jsonl")
    viewer = Viewer(runs)
    yield viewer
    viewer.stop()


def test_the_runs_list_names_each_damaged_run_and_shows_the_others(served):
    with case("bad inputs", "one bad file"):
        status, page = get(served.base + "/")
        assert status == 200
        assert "b/run.json: key &#39;models&#39;" in page and "c/results.jsonl:2: key &#39;gold&#39;" in page
        assert "caf\\xe9" in page and "/run/caf%E9" in page


PAGES = ["/run/a", "/unit/a?u=0", "/scenario/a", "/run/caf%E9", "/unit/caf%E9?u=1", "/compare?a=a&b=caf%E9"]
DAMAGED = ["/run/b", "/run/c", "/unit/b?u=0", "/unit/caf%E9?u=0", "/compare?a=a&b=b"]
BAD_URLS = ["/run/%ZZ", "/run/%E9", "/run/a/%C0", "/unit/a?u=%ZZ", "/unit/a?u=%FF%FE", "/compare?a=%ZZ&b=a",
            "/run/a?page=%FF", "/run/a?q=%FF%FE", "/compare?a=a%252Fb&b=a", "/run/%", "/unit/a?u=%"]


@pytest.mark.parametrize("group", ["untouched", "damaged", "bad urls"])
def test_every_page_answers_below_500_and_the_server_keeps_serving(served, group):
    with case("bad inputs", "one bad file"):
        paths = {"untouched": PAGES, "damaged": DAMAGED, "bad urls": BAD_URLS}[group]
        for path in paths:
            status, page = get(served.base + path)
            assert status < 500 and "Traceback" not in page, (path, status, page[-500:])
            if group == "untouched":
                assert status == 200, (path, page[-500:])
            elif group == "damaged" and path != "/unit/caf%E9?u=0":
                assert 400 <= status < 500 and 'class="problem"' in page, (path, status)
        assert get(served.base + "/")[0] == 200 and served.process.poll() is None
