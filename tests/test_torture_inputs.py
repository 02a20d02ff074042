"""Torture: bad input of every kind — hostile YAML, broken datasets, mistyped command lines,
damaged run folders — and a disk that is full, read-only or not ours.

Bad input gets exactly one line naming the file (and line or key where there is one), exit code
2, within seconds and bounded memory, and nothing written. A damaged run folder is an error that
names the line, never silent loss; what is harmless (a blank line, a torn last line) is survived.
A refusing disk gets one line and exit code 3, and the run resumes once the disk takes writes.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
import tracemalloc
from pathlib import Path

import pytest

import moot.cli.run  # noqa: F401  (imported before any case is timed)
import moot.models.backends.openai.client  # noqa: F401
from backend_support import loopback_only  # noqa: F401
from fault_server import FaultServer
from torture_support import (  # noqa: F401 - tmpfs: a fixture
    CONFERENCE, ROWS, SCRIPTED_COLA, assert_clean, case, dataset, drop_root_powers, files_of, moot, moot_process,
    outcome_of, read_jsonl, require_root, tmpfs, write,
)

BOMB = "a: &a [" + ", ".join(["lol"] * 9) + "]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))  # 9**9 values from 400 bytes
JUNK = bytes(random.Random(7).randrange(256) for _ in range(4096))


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# name -> (files {name: text or bytes}, argv, a phrase the one line must hold)
RUN_SCENARIO = ["run", "{d}/s.yaml", "--model", "scripted", "--out", "{d}/out"]
RUN_DATASET = ["run", "{d}/cola.yaml", "--dataset", "{d}/data.yaml", "--out", "{d}/out"]
SPEC = "path: data.{ext}\nformat: {ext}\ncolumns: {{text: text, target: target, label: label}}\n"
CASES = {
    "yaml alias bomb": ({"s.yaml": BOMB}, RUN_SCENARIO, "nested aliases"),
    "yaml alias bomb (validate)": ({"s.yaml": BOMB}, ["validate", "{d}/s.yaml"], "nested aliases"),
    "yaml recursive alias": ({"s.yaml": "a: &a [*a]\n"}, RUN_SCENARIO, "recursive"),
    "yaml nested 100 000 deep": ({"s.yaml": "a: " + nested(100_000)}, RUN_SCENARIO, "nested deeper than"),
    "yaml 3 MB file": ({"s.yaml": "title: x\n" + "# padding\n" * 300_000}, RUN_SCENARIO, "too large"),
    "yaml binary junk": ({"s.yaml": JUNK}, RUN_SCENARIO, "not UTF-8"),
    "yaml NUL byte": ({"s.yaml": b"title: a\x00b\n"}, RUN_SCENARIO, "not allowed"),
    "yaml latin-1": ({"s.yaml": "title: caf\u00e9\n".encode("latin-1")}, RUN_SCENARIO, "not UTF-8"),
    "yaml utf-16": ({"s.yaml": "title: x\n".encode("utf-16")}, RUN_SCENARIO, "not UTF-8"),
    "yaml huge line": ({"s.yaml": "title: x\n" + "a: b " * 300_000}, RUN_SCENARIO, "invalid YAML"),
    "yaml python tag": ({"s.yaml": "title: !!python/object/apply:os.system [ls]\n"}, RUN_SCENARIO,
                        "could not determine a constructor"),
    "yaml empty": ({"s.yaml": ""}, RUN_SCENARIO, "must be a mapping"),
    "yaml duplicate key": ({"s.yaml": "title: a\ntitle: b\n"}, RUN_SCENARIO, "duplicate key"),
    "yaml unknown protocol": ({"s.yaml": "protocol: colla\n"}, RUN_SCENARIO, "did you mean 'cola'"),
    "yaml misspelt key": ({"s.yaml": "protocol: cola\nmodles: {default: scripted}\n"}, RUN_SCENARIO,
                          "did you mean 'models'"),
    "yaml bad model spec": ({"s.yaml": "protocol: cola\nmodels: {default: gpt-4o}\n"}, RUN_SCENARIO,
                            "did you mean 'openai:gpt-4o'"),
    "spec alias bomb": ({"data.yaml": BOMB}, RUN_DATASET, "nested aliases"),
    "spec latin-1": ({"data.yaml": "path: caf\u00e9.csv\n".encode("latin-1")}, RUN_DATASET, "not UTF-8"),
    "data file missing": ({"data.yaml": SPEC.format(ext="csv")}, RUN_DATASET, "file not found"),
    "data empty": ({"data.yaml": SPEC.format(ext="csv"), "data.csv": ""}, RUN_DATASET, "no items to run"),
    "data header only": ({"data.yaml": SPEC.format(ext="csv"), "data.csv": "text,target,label\n"}, RUN_DATASET,
                         "no items to run"),
    "data binary junk": ({"data.yaml": SPEC.format(ext="csv"), "data.csv": JUNK}, RUN_DATASET, "cannot decode"),
    "data latin-1 as utf-8": ({"data.yaml": SPEC.format(ext="csv"),
                               "data.csv": "text,target,label\ncaf\u00e9,x,favor\n".encode("latin-1")},
                              RUN_DATASET, "cannot decode"),
    "data huge csv field": ({"data.yaml": SPEC.format(ext="csv"),
                             "data.csv": 'text,target,label\n"' + "x" * 300_000 + '",t,favor\n'},
                            RUN_DATASET, "field larger than field limit"),
    "data 2 MB jsonl line": ({"data.yaml": SPEC.format(ext="jsonl"),
                              "data.jsonl": json.dumps({"text": "x" * 2_000_000}) + "\n"},
                             RUN_DATASET, "line longer than"),
    "data jsonl nested 100 000 deep": ({"data.yaml": SPEC.format(ext="jsonl"), "data.jsonl": nested(100_000)},
                                       RUN_DATASET, "nested too deeply"),
    "data jsonl not an object": ({"data.yaml": SPEC.format(ext="jsonl"), "data.jsonl": "[1, 2]\n"},
                                 RUN_DATASET, "expected a JSON object"),
    "data label outside the label set": ({"data.yaml": SPEC.format(ext="csv"),
                                          "data.csv": "text,target,label\nhi,x,maybe\n"},
                                         RUN_DATASET, "not one of the scenario's labels"),
    "argv model spec": ({}, ["run", "cola", "--input", "text=a", "--input", "target=b", "--model", "gpt-4o",
                             "--out", "{d}/out"], "did you mean 'openai:gpt-4o'"),
    "argv misspelt option": ({}, ["run", "cola", "--modle", "scripted"], "did you mean '--model'"),
    "argv misspelt command": ({}, ["rnu", "cola"], "did you mean 'run'"),
    "argv misspelt role": ({}, ["run", "cola", "--input", "text=a", "--input", "target=b", "--model",
                                "judgr=scripted", "--out", "{d}/out"], "did you mean 'judger'"),
    "argv misspelt scenario": ({}, ["run", "drug_polcy"], "did you mean 'drug_policy'"),
    "argv missing api key": ({}, ["run", "cola", "--input", "text=a", "--input", "target=b", "--model",
                                  "openai:gpt-4o-mini", "--out", "{d}/out"], "needs an API key"),
    "argv unreachable endpoint": ({}, ["run", "cola", "--input", "text=a", "--input", "target=b", "--model",
                                       "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--out", "{d}/out"],
                                  "unreachable"),
    "argv --vary on items": ({}, ["run", "cola", "--vary", "seed=1,2", "--out", "{d}/out"], "--vary"),
    "argv --limit 0": ({}, ["run", "cola", "--limit", "0"], "--limit"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_line_exit_2_within_seconds_and_bounded_memory(name, tmp_path, monkeypatch):
    files, argv, phrase = CASES[name]
    for file, text in files.items():
        write(tmp_path / file, text)
    if "cola.yaml" not in files:
        write(tmp_path / "cola.yaml", SCRIPTED_COLA)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with case("bad inputs"):
        tracemalloc.start()
        started = time.monotonic()
        try:
            ran = moot(*[a.replace("{d}", str(tmp_path)) for a in argv])
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        assert ran.code == 2, (ran.out, ran.err)
        assert time.monotonic() - started < 5
        assert peak < 64 * 2 ** 20, f"{peak / 2 ** 20:.0f} MB"
        shown = ran.out if argv[0] == "validate" else ran.err
        lines = [line for line in shown.splitlines() if line.strip()]
        assert len(lines) == 1 and phrase in lines[0], shown
        named = [f for f in files if f in lines[0]]
        assert named or argv[0] != "run" or not files, f"the line names no file: {lines[0]}"
        assert_clean(ran)
        assert not (tmp_path / "out").exists(), "a rejected run wrote its folder"


# --- damaged run folders -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def finished_batch(tmp_path_factory):
    """A finished COLA batch (scripted model) to damage; and what it came to."""
    directory = tmp_path_factory.mktemp("finished")
    write(directory / "cola.yaml", SCRIPTED_COLA)
    dataset(directory)
    ran = moot(*batch_argv(directory))
    assert ran.code == 0, ran.err
    return directory, outcome_of(directory / "run")


def batch_argv(directory):
    return [directory / "cola.yaml", "--dataset", directory / "data.yaml", "--out", directory / "run", "--quiet"]


def copy_of(finished_batch, tmp_path) -> Path:
    directory, _ = finished_batch
    for name in ("cola.yaml", "data.yaml", "data.csv"):
        shutil.copy(directory / name, tmp_path / name)
    shutil.copytree(directory / "run", tmp_path / "run")
    return tmp_path / "run"


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def unfinish(run: Path, unit: str) -> Path:
    """Drop a unit's result row and its run_finished (a run killed before it ended); its transcript."""
    rows = [line for line in lines_of(run / "results.jsonl") if json.loads(line)["id"] != unit]
    (run / "results.jsonl").write_bytes(b"".join(rows))
    transcript = run / f"{unit}.jsonl"
    transcript.write_bytes(b"".join(lines_of(transcript)[:-2]))  # outcome + run_finished
    return transcript


def duplicate_line(lines):
    return lines[:3] + [lines[2]] + lines[3:]


def swap_lines(lines):
    return lines[:2] + [lines[3], lines[2]] + lines[4:]


def garble_line(lines):
    return lines[:2] + [b'{"seq": 3, "type": "mess\xff\n'] + lines[3:]


# damage -> (what it does to a transcript's lines, the phrase naming it)
TRANSCRIPT_DAMAGE = {"duplicated line": (duplicate_line, ":4: duplicated event"),
                     "reordered lines": (swap_lines, ":3: event out of order"),
                     "garbled line": (garble_line, ":3: garbled event")}


@pytest.mark.parametrize("damage", sorted(TRANSCRIPT_DAMAGE))
@pytest.mark.parametrize("command", ["run", "replay", "report"])
def test_a_damaged_transcript_is_an_error_naming_its_line(damage, command, finished_batch, tmp_path):
    alter, phrase = TRANSCRIPT_DAMAGE[damage]
    run = copy_of(finished_batch, tmp_path)
    transcript = unfinish(run, "1") if command == "run" else run / "1.jsonl"
    transcript.write_bytes(b"".join(alter(lines_of(transcript))))
    before = transcript.read_bytes()
    argv = {"run": batch_argv(tmp_path), "replay": ["replay", transcript],
            "report": ["report", run, "--out", tmp_path / "report"]}[command]
    with case("bad inputs"):
        ran = moot(*argv)
        assert ran.code == 2, (ran.out, ran.err)
        assert ran.err_lines == [ran.err.strip()] and f"{transcript}{phrase}" in ran.err, ran.err
        assert_clean(ran)
        assert transcript.read_bytes() == before  # nothing deleted, nothing appended


def garble_row(rows):
    return rows[:1] + [b'{"id": "1", "stat\n'] + rows[2:]


def duplicate_row(rows):
    return rows + rows[:1]


RESULTS_DAMAGE = {"garbled row": (garble_row, ":2: garbled result row"),
                  "duplicated row": (duplicate_row, f":{len(ROWS) + 1}: unit '0' recorded twice")}


@pytest.mark.parametrize("damage", sorted(RESULTS_DAMAGE))
@pytest.mark.parametrize("command", ["run", "report"])
def test_a_damaged_results_file_is_an_error_naming_its_line(damage, command, finished_batch, tmp_path):
    alter, phrase = RESULTS_DAMAGE[damage]
    run = copy_of(finished_batch, tmp_path)
    results = run / "results.jsonl"
    results.write_bytes(b"".join(alter(lines_of(results))))
    argv = batch_argv(tmp_path) if command == "run" else ["report", run, "--out", tmp_path / "report"]
    with case("bad inputs"):
        ran = moot(*argv)
        assert ran.code == 2, (ran.out, ran.err)
        assert ran.err_lines == [ran.err.strip()] and f"{results}{phrase}" in ran.err, ran.err
        assert_clean(ran)


@pytest.mark.parametrize("file, content, phrase", [
    ("run.json", b'{"protocol": "cola", ', "unreadable run.json"),
    ("cache.sqlite", b"not a database" * 100, "not a usable reply cache"),
])
def test_a_damaged_run_file_is_one_line(file, content, phrase, finished_batch, tmp_path):
    run = copy_of(finished_batch, tmp_path)
    unfinish(run, "1")  # so the run has something to do
    (run / file).write_bytes(content)
    with case("bad inputs"):
        ran = moot(*batch_argv(tmp_path))
        assert ran.code == 2, (ran.out, ran.err)
        assert ran.err_lines == [ran.err.strip()] and f"{run / file}" in ran.err and phrase in ran.err, ran.err
        assert_clean(ran)


def test_blank_lines_are_harmless(finished_batch, tmp_path):
    run = copy_of(finished_batch, tmp_path)
    transcript = unfinish(run, "1")
    lines = lines_of(transcript)
    transcript.write_bytes(b"".join(lines[:3] + [b"\n", b"   \n"] + lines[3:]))
    results = run / "results.jsonl"
    results.write_bytes(b"\n" + results.read_bytes() + b"\n\n")
    before = transcript.read_bytes()
    with case("damaged files"):
        ran = moot(*batch_argv(tmp_path))
        assert ran.code == 0, ran.err
        assert transcript.read_bytes().startswith(before)  # appended to, nothing deleted
        assert outcome_of(run) == finished_batch[1]


@pytest.mark.parametrize("file", ["transcript", "results"])
def test_a_torn_last_line_is_set_aside_and_the_next_write_starts_a_fresh_line(file, finished_batch, tmp_path):
    run = copy_of(finished_batch, tmp_path)
    transcript = unfinish(run, "1")
    path = transcript if file == "transcript" else run / "results.jsonl"
    whole = lines_of(path)[-1]
    torn = whole[: len(whole) // 2]  # a writer killed mid-line
    path.write_bytes(path.read_bytes() + torn)
    with case("damaged files"):
        ran = moot(*batch_argv(tmp_path))
        assert ran.code == 0, ran.err
        assert (path.parent / f"{path.name}.torn").read_bytes() == torn + b"\n"
        assert outcome_of(run) == finished_batch[1]  # every row whole, none glued, none lost


# --- a disk that refuses -------------------------------------------------------------------------
def conference_files(directory: Path) -> Path:
    write(directory / "conference.yaml", CONFERENCE.replace("'openai:fault'", "scripted"))
    return directory / "conference.yaml"


@pytest.fixture(scope="module")
def undisturbed_conference(tmp_path_factory):
    directory = tmp_path_factory.mktemp("conference")
    ran = moot(conference_files(directory), "--out", directory / "run", "--quiet")
    assert ran.code == 0, ran.err
    return outcome_of(directory / "run")


def assert_environment_line(ran, disk: Path, what: str) -> None:
    assert ran.code == 3, (ran.out, ran.err)
    assert len(ran.err_lines) == 1, ran.err
    line = ran.err_lines[0]
    assert line.startswith(f"error: {disk}") and what in line and "run the same command again" in line, line
    assert_clean(ran)


def test_a_full_disk_is_one_line_exit_3_and_the_run_resumes(tmpfs, tmp_path, undisturbed_conference):
    disk, remount = tmpfs
    remount("size=96k")  # room for the run's start, not its end
    scenario = conference_files(tmp_path)
    with case("fault modes"):
        ran = moot(scenario, "--out", disk / "run", "--quiet")
        assert_environment_line(ran, disk, "the disk is full")
        transcript = disk / "run" / "conference.jsonl"
        if f"error: {transcript}:" not in ran.err:  # another file was refused: the transcript records why
            last = read_jsonl(transcript)[-1]
            assert last["type"] == "error" and last["stage"] == "environment", last
            assert "No space left on device" in last["cause"]
        remount("size=8m")
        ran = moot(scenario, "--out", disk / "run", "--quiet")
        assert ran.code == 0, ran.err
        assert outcome_of(disk / "run") == undisturbed_conference


def test_a_read_only_disk_is_one_line_exit_3_and_nothing_written(tmpfs, tmp_path):
    disk, remount = tmpfs
    remount("ro")
    with case("fault modes"):
        ran = moot(conference_files(tmp_path), "--out", disk / "run", "--quiet")
        assert_environment_line(ran, disk, "read-only")
        assert list(disk.iterdir()) == []


def test_a_run_resumed_on_a_read_only_disk_changes_nothing_and_resumes_later(tmpfs, tmp_path):
    """(A tmpfs with files open for writing cannot be remounted read-only, so the disk turns
    read-only between a failed run and its resumption.)"""
    disk, remount = tmpfs
    write(tmp_path / "conference.yaml", CONFERENCE)
    argv = [tmp_path / "conference.yaml", "--quiet", "--api-key", "k", "--base-url"]
    with case("fault modes"), FaultServer("ok") as healthy:
        assert moot(*argv, healthy.url, "--out", tmp_path / "undisturbed").code == 0
        with FaultServer("status-503") as failing:
            assert moot(*argv, failing.url, "--out", disk / "run").code == 1
        before = {p: p.read_bytes() for p in files_of(disk)}
        remount("ro")
        ran = moot(*argv, healthy.url, "--out", disk / "run")
        assert_environment_line(ran, disk, "read-only")
        assert {p: p.read_bytes() for p in files_of(disk)} == before
        remount("rw")
        ran = moot(*argv, healthy.url, "--out", disk / "run")
        assert ran.code == 0, ran.err
        assert outcome_of(disk / "run") == outcome_of(tmp_path / "undisturbed")


def test_a_folder_without_write_permission_is_one_line_exit_3(tmp_path):
    require_root()
    scenario = conference_files(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    locked.chmod(0o555)
    tmp_path.chmod(0o755)
    proc = moot_process(scenario, "--out", locked / "run", "--quiet", preexec_fn=drop_root_powers)
    out, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("this root ignores file permissions even without CAP_DAC_OVERRIDE")
    with case("fault modes"):
        assert proc.returncode == 3, err
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and "permission denied" in lines[0] and str(locked) in lines[0], err
        assert list(locked.iterdir()) == []


# --- surprises ----------------------------------------------------------------------------------
def test_a_run_writes_nothing_outside_its_folder(tmp_path, monkeypatch):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    ran = moot("cola", "--model", "scripted", "--out", tmp_path / "run", "--quiet")
    assert ran.code == 0, ran.err
    assert list(cwd.iterdir()) == []  # no ./runs, no cache: the reply cache lives in the run folder
    assert (tmp_path / "run" / "cache.sqlite").is_file()


def test_unit_ids_that_look_alike_never_share_a_transcript():
    from moot.engine.folder import unit_file

    ids = ["a/b", "a_b", "a b", "a:b", "run", "results", "cache", "x" * 200, "x" * 201, "", ".", "..", ".a"]
    assert len({unit_file(i) for i in ids}) == len(ids)
