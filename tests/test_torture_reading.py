"""Torture: reading is bounded before it is trusted.

Every reader of what moot did not just write — transcripts (`replay`, `export`, `report`, a
resumed run), results.jsonl, run.json, datasets — reads one line at a time and checks it before
going on: a file that is not what it should be is refused at its first line at once, however
large; a line longer than any moot writes is refused without being held whole; memory does not
grow with the file (measured: tracemalloc in the process, and the peak resident size of a moot
process on a small and on a 100 MB file). Strictness is kept: a torn last line is left out (and
set aside before appending, looking back from the end of the file), anything else damaged is an
error naming its file and line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import tracemalloc
from pathlib import Path

import pytest

import moot.cli.export  # noqa: F401  (imported before any case is timed)
import moot.cli.replay  # noqa: F401
import moot.cli.report  # noqa: F401
import moot.cli.run  # noqa: F401
from moot.engine.folder import RunFolderError
from moot.log.events import TranscriptError
from moot.log.jsonl import MAX_LINE, set_aside_torn_tail
from moot.log.transcript import Reading, load
from torture_support import SCRIPTED_COLA, assert_clean, case, moot, moot_process, scripted_batches, write

MB = 2**20
BOUND = 2 * MAX_LINE + 4 * MB  # a line is read up to MAX_LINE bytes, and copied once as it is read


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished COLA batch (scripted model) to damage."""
    directory = scripted_batches(tmp_path_factory.mktemp("reading"), ("run",))
    for warm in (("replay", directory / "run" / "0.jsonl", "--no-delay"), ("report", directory / "run", "--out",
                 directory / "report"), ("export", directory / "run" / "0.jsonl", "--out", directory / "0.md")):
        moot(*warm)  # every module a command imports is imported before any case is timed (reading is)
    return directory


def big(path: Path, size: int, line: bytes) -> Path:
    """A file of about `size` bytes, `line` repeated (no newline in it: one line of `size` bytes)."""
    with open(path, "wb") as f:
        for _ in range(size // len(line)):
            f.write(line)
    return path


def measured(*argv: object):
    """`moot ARGV` in this process: its result, the seconds it took and its peak traced memory."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        ran = moot(*argv)
    finally:
        took = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return ran, took, peak


def assert_refused(ran, where: str, phrase: str) -> None:
    assert ran.code == 2, (ran.out, ran.err)
    assert ran.err_lines == [ran.err.strip()] and where in ran.err and phrase in ran.err, ran.err
    assert_clean(ran)


# --- what is not a transcript, however large: refused at its first line at once -------------------
NOT_TRANSCRIPTS = {  # name -> (size, the repeated bytes, the phrase of the one line)
    "100 MB of CSV": (100 * MB, b"text,target,label\n", "its first line is not a JSON object"),
    "100 MB of JSONL rows": (100 * MB, json.dumps({"text": "a post", "label": "favor"}).encode() + b"\n",
                             "first event must be run_started"),
    "100 MB on one line": (100 * MB, b"x" * 4096, "its first line is longer than"),
    "100 MB of one JSON array": (100 * MB, b"[1," * 4096, "its first line is longer than"),
}


@pytest.mark.parametrize("name", NOT_TRANSCRIPTS)
@pytest.mark.parametrize("command", ["replay", "export", "report"])
def test_a_large_file_that_is_not_a_transcript_is_refused_at_line_1_at_once(name, command, finished, tmp_path):
    size, line, phrase = NOT_TRANSCRIPTS[name]
    path = big(tmp_path / "big.jsonl", size, line)
    argv = {"replay": ["replay", path, "--no-delay"], "export": ["export", path, "--out", tmp_path / "out.html"],
            "report": ["report", path, "--out", tmp_path / "report"]}[command]
    with case("bad inputs", "reading"):
        ran, took, peak = measured(*argv)
        assert_refused(ran, f"{path}:1:", phrase)
        assert took < 1.0, f"{took:.2f} s"
        assert peak < BOUND, f"{peak / MB:.0f} MB"
        assert not (tmp_path / "out.html").exists() and not (tmp_path / "report").exists()


def test_memory_does_not_grow_with_the_file(finished, tmp_path):
    """The peak resident size of `moot replay` on a 1 KB and on a 100 MB non-transcript."""
    small = big(tmp_path / "small.jsonl", 1024, b"text,target,label\n")
    large = big(tmp_path / "large.jsonl", 100 * MB, b"text,target,label\n")
    peaks = {}
    with case("bad inputs", "reading"):
        for name, path in (("small", small), ("large", large)):
            with open(tmp_path / f"{name}.err", "w") as err:
                proc = moot_process("replay", path, "--no-delay", stdout=subprocess.DEVNULL, stderr=err)
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
            said = (tmp_path / f"{name}.err").read_text()
            assert proc.returncode == 2 and "its first line is not a JSON object" in said
            peaks[name] = usage.ru_maxrss * 1024
        assert peaks["large"] - peaks["small"] < 16 * MB, {k: f"{v / MB:.0f} MB" for k, v in peaks.items()}


# --- a transcript with a line longer than any moot writes ------------------------------------------
def with_long_line(transcript: Path, out: Path, size: int, newline: bool = True) -> Path:
    """`transcript`'s first event, then an event whose content is `size` bytes long."""
    first = transcript.read_bytes().splitlines(keepends=True)[0]
    with open(out, "wb") as f:
        f.write(first)
        f.write(b'{"seq": 2, "type": "message", "content": "')
        big_chunk = b"y" * MB
        for _ in range(size // MB):
            f.write(big_chunk)
        f.write(b'"}' + (b"\n" if newline else b""))
    return out


@pytest.mark.parametrize("command", ["replay", "export"])
def test_a_transcript_with_a_50_mb_line_is_one_line_naming_it_in_bounded_memory(command, finished, tmp_path):
    path = with_long_line(finished / "run" / "0.jsonl", tmp_path / "long.jsonl", 50 * MB)
    argv = ["replay", path, "--no-delay"] if command == "replay" else ["export", path, "--out", tmp_path / "o.md"]
    with case("bad inputs", "reading"):
        ran, took, peak = measured(*argv)
        assert_refused(ran, f"{path}:2:", "longer than 8 MiB")
        assert peak < BOUND, f"{peak / MB:.0f} MB"
        assert took < 5, f"{took:.2f} s"


def test_a_run_resumed_over_a_transcript_with_a_50_mb_torn_last_line_is_refused_and_left_alone(finished, tmp_path):
    """A last line too long to be any event moot wrote is not taken for a torn one: an error, the file as it was."""
    run = tmp_path / "run"
    shutil.copytree(finished / "run", run)
    for name in ("cola.yaml", "data.yaml", "data.csv"):
        shutil.copy(finished / name, tmp_path / name)
    rows = [r for r in (run / "results.jsonl").read_bytes().splitlines(keepends=True) if json.loads(r)["id"] != "1"]
    (run / "results.jsonl").write_bytes(b"".join(rows))
    with_long_line(finished / "run" / "1.jsonl", run / "1.jsonl", 50 * MB, newline=False)
    before = (run / "1.jsonl").stat().st_size
    with case("damaged files", "reading"):
        ran, _, peak = measured(tmp_path / "cola.yaml", "--dataset", tmp_path / "data.yaml", "--out", run, "--quiet")
        assert_refused(ran, f"{run / '1.jsonl'}:2:", "longer than 8 MiB")
        assert (run / "1.jsonl").stat().st_size == before and not (run / "1.jsonl.torn").exists()
        assert peak < BOUND, f"{peak / MB:.0f} MB"


# --- results.jsonl, run.json, transcripts in a folder --------------------------------------------
FOLDER_DAMAGE = {  # file -> (its content as (size, repeated bytes), the phrase)
    "results.jsonl": ((100 * MB, b"x" * 4096), "results.jsonl:1: not a results file (its first line is longer than"),
    "run.json": ((100 * MB, b" " * 4096), "run.json: larger than 8 MiB"),
    "9.jsonl": ((100 * MB, b"text,target,label\n"), "9.jsonl:1: not a moot transcript"),
}


@pytest.mark.parametrize("file", FOLDER_DAMAGE)
def test_a_huge_file_in_a_run_folder_is_refused_at_once(file, finished, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finished / "run", run)
    (size, line), phrase = FOLDER_DAMAGE[file]
    big(run / file, size, line)
    with case("bad inputs", "reading"):
        ran, took, peak = measured("report", run, "--out", tmp_path / "report")
        assert_refused(ran, str(run), phrase)
        assert took < 2, f"{took:.2f} s"
        assert peak < BOUND, f"{peak / MB:.0f} MB"


def test_a_results_row_that_is_not_an_object_names_its_line(finished, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finished / "run", run)
    rows = (run / "results.jsonl").read_bytes().splitlines(keepends=True)
    (run / "results.jsonl").write_bytes(rows[0] + b'["not", "a row"]\n' + b"".join(rows[1:]))
    with case("bad inputs", "reading"):
        ran = moot("report", run, "--out", tmp_path / "report")
        assert_refused(ran, f"{run / 'results.jsonl'}:2:", "garbled result row: not a JSON object")


# --- datasets ---------------------------------------------------------------------------------
DATASETS = {  # format -> (the data file's content as (size, repeated bytes), the phrase)
    "csv": ((100 * MB, b"x," * 2048), "line longer than 1,000,000 characters"),
    "tsv": ((100 * MB, b"x\t" * 2048), "line longer than 1,000,000 characters"),
    "lines": ((100 * MB, b"1 " * 2048), "line longer than 1,000,000 characters"),
}


@pytest.mark.parametrize("fmt", DATASETS)
def test_a_dataset_of_one_100_mb_line_is_refused_in_bounded_memory(fmt, tmp_path):
    write(tmp_path / "cola.yaml", SCRIPTED_COLA)
    columns = "{text: '1', label: '0'}" if fmt == "lines" else "{text: text, target: target, label: label}"
    write(tmp_path / "data.yaml", f"path: data.{fmt}\nformat: {fmt}\ncolumns: {columns}\n")
    (size, line), phrase = DATASETS[fmt]
    big(tmp_path / f"data.{fmt}", size, line)
    with case("bad inputs", "reading"):
        ran, took, peak = measured(tmp_path / "cola.yaml", "--dataset", tmp_path / "data.yaml",
                                   "--out", tmp_path / "out")
        assert_refused(ran, f"data.{fmt}:1:", phrase)
        assert took < 5, f"{took:.2f} s"
        assert peak < 32 * MB, f"{peak / MB:.0f} MB"
        assert not (tmp_path / "out").exists()


# --- reading a real transcript ------------------------------------------------------------------
def long_transcript(source: Path, out: Path, events: int) -> Path:
    """A well-formed transcript of `events` events: `source`'s first event, then copies of its
    messages numbered on."""
    rows = [json.loads(line) for line in source.read_text().splitlines()]
    messages = [r for r in rows if r["type"] == "message"]
    with open(out, "w") as f:
        f.write(json.dumps(rows[0]) + "\n")
        for seq in range(2, events + 1):
            f.write(json.dumps({**messages[seq % len(messages)], "seq": seq}) + "\n")
    return out


def test_reading_a_transcript_event_by_event_holds_one_line(finished, tmp_path):
    path = long_transcript(finished / "run" / "0.jsonl", tmp_path / "long.jsonl", 40_000)
    with case("bad inputs", "reading"):
        tracemalloc.start()
        try:
            count = sum(1 for _ in Reading(path))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert count == 40_000
        assert path.stat().st_size > 12 * MB and peak < 2 * MB, f"{peak / MB:.1f} MB"
        assert len(load(path).events) == 40_000


def test_a_torn_tail_is_set_aside_looking_back_from_the_end_only(finished, tmp_path):
    path = long_transcript(finished / "run" / "0.jsonl", tmp_path / "long.jsonl", 40_000)
    with open(path, "ab") as f:
        f.write(b'{"seq": 40001, "type": "mess')
    with case("damaged files", "reading"):
        assert load(path).torn_tail and len(load(path).events) == 40_000
        tracemalloc.start()
        try:
            torn = set_aside_torn_tail(path, TranscriptError)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert torn == b'{"seq": 40001, "type": "mess' and peak < MB, f"{peak / MB:.1f} MB"
        assert (tmp_path / "long.jsonl.torn").read_bytes() == torn + b"\n"
        assert path.read_bytes().endswith(b"}\n") and not load(path).torn_tail


def test_a_last_line_longer_than_any_event_is_never_taken_for_a_torn_one(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"id": "0"}\n' + b"z" * (MAX_LINE + 10))
    with case("damaged files", "reading"):
        with pytest.raises(RunFolderError, match="its last line is longer than 8 MiB"):
            set_aside_torn_tail(path, RunFolderError)
        assert path.stat().st_size == 12 + MAX_LINE + 10
