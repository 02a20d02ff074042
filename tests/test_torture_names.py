"""Torture: names that are not UTF-8, and names that collide (issue 32, class 9). The real command
is given bytes that are not UTF-8 (as a Linux shell passes them) in every place a name or value
goes: one line naming the option and showing the bytes, exit 2, nothing written (no half-made
folder, no run.lock). A working directory whose name is not UTF-8 is refused likewise, naming the
key run.json would have held. A run folder named like a bundled scenario is never taken for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from torture_support import SCRIPTED_COLA, Ran, assert_clean, case, dataset, moot, write

import moot as api
from moot.errors import MootError

E9 = b"\xe9"  # é in Latin-1: not UTF-8


def moot_bytes(*argv: bytes, cwd: Path | bytes) -> Ran:
    done = subprocess.run([sys.executable.encode(), b"-m", b"moot", *argv], capture_output=True, timeout=120, cwd=cwd)
    return Ran(done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))


def listing(folder: Path) -> set[bytes]:
    return {os.path.relpath(os.path.join(top, name), os.fsencode(folder))
            for top, dirs, names in os.walk(os.fsencode(folder)) for name in dirs + names}


@pytest.fixture
def named(tmp_path):
    """A scenario and dataset, also under names that are not UTF-8 (a file, a folder)."""
    write(tmp_path / "cola.yaml", SCRIPTED_COLA)
    dataset(tmp_path)
    os.link(tmp_path / "cola.yaml", os.fsencode(tmp_path) + b"/cola" + E9 + b".yaml")
    os.link(tmp_path / "data.yaml", os.fsencode(tmp_path) + b"/data" + E9 + b".yaml")
    folder = os.fsencode(tmp_path) + b"/d" + E9
    os.mkdir(folder)
    for name in (b"data.yaml", b"data.csv"):
        os.link(os.fsencode(tmp_path / name.decode()), folder + b"/" + name)
    return tmp_path


RUN = [b"run", b"cola.yaml", b"--dataset", b"data.yaml", b"--out", b"out"]
ARGV = {"--input value": [b"run", b"cola", b"--input", b"text=caf" + E9, b"--input", b"target=x", b"--model",
                          b"scripted", b"--out", b"out"],
        "scenario path": [b"run", b"cola" + E9 + b".yaml", b"--dataset", b"data.yaml", b"--out", b"out"],
        "dataset path": [b"run", b"cola.yaml", b"--dataset", b"data" + E9 + b".yaml", b"--out", b"out"],
        "dataset folder": [b"run", b"cola.yaml", b"--dataset", b"d" + E9 + b"/data.yaml", b"--out", b"out"],
        "--dataset=": [b"run", b"cola.yaml", b"--dataset=data" + E9 + b".yaml", b"--out", b"out"],
        "--vary value": [*RUN, b"--vary", b"models.default=scripted,scripted:" + E9],
        "--out": [b"run", b"cola.yaml", b"--dataset", b"data.yaml", b"--out", b"out" + E9],
        "--rater": [b"annotate", b"out", b"--rater", b"b" + E9 + b"b"],
        "--model": [*RUN, b"--model", b"judger=scripted:" + E9]}


@pytest.mark.parametrize("name", sorted(ARGV))
def test_an_argument_that_is_not_utf8_is_one_line_and_nothing_is_written(named, name):
    with case("bad inputs", "names"):
        before = listing(named)
        ran = moot_bytes(*ARGV[name], cwd=named)
        assert ran.code == 2, ran.err
        assert_clean(ran, max_err_lines=1)
        assert "not UTF-8" in ran.err and "\\xe9" in ran.err
        assert listing(named) == before  # no half-made folder, no run.lock


def test_a_working_directory_that_is_not_utf8_is_one_line_naming_the_key(named):
    with case("bad inputs", "names"):
        before = listing(named)
        ran = moot_bytes(b"run", b"../cola.yaml", b"--dataset", b"data.yaml", b"--out", b"out",
                         cwd=os.fsencode(named) + b"/d" + E9)
        assert ran.code == 2, ran.err
        assert_clean(ran, max_err_lines=1)
        assert "not UTF-8" in ran.err and "data_file" in ran.err
        assert listing(named) == before


def test_the_api_refuses_a_path_or_value_that_is_not_utf8_before_writing(named):
    with case("bad inputs", "names"):
        before = listing(named)
        with pytest.raises(MootError, match="scenario_path .*not UTF-8"):
            api.run(os.fsdecode(os.fsencode(named) + b"/cola" + E9 + b".yaml"), dataset=named / "data.yaml",
                    out=named / "out")
        with pytest.raises(MootError, match=r"input.text 'caf\\xe9': not UTF-8"):
            api.run("cola", models="scripted", inputs={"text": os.fsdecode(b"caf" + E9), "target": "x"},
                    out=named / "out")
        assert listing(named) == before


@pytest.mark.parametrize("where", ["here", "beside the experiment"])
def test_a_folder_named_like_a_bundled_scenario_is_not_the_scenario(tmp_path, monkeypatch, where):
    """`moot run cola --out cola` made a folder `cola`: it continues, and an experiment naming
    `cola` runs the bundled scenario (it answered "did you mean 'cola'?")."""
    with case("bad inputs", "names"):
        dataset(tmp_path)
        monkeypatch.chdir(tmp_path)
        for _ in range(2):
            ran = moot("run", "cola", "--dataset", "data.yaml", "--model", "scripted", "--out", "cola", "--quiet")
            assert ran.code == 0, ran.err
        spec = write((tmp_path / "sub" if where == "beside the experiment" else tmp_path) / "exp.yaml",
                     f"experiment: t\narms:\n  - {{name: a, scenario: cola}}\ndatasets: [{tmp_path / 'data.yaml'}]\n")
        (spec.parent / "cola").mkdir(exist_ok=True)
        ran = moot("run", spec, "--model", "scripted", "--plan")
        assert ran.code == 0, ran.err
        assert_clean(ran, max_err_lines=0)
        assert "did you mean" not in ran.out + ran.err
