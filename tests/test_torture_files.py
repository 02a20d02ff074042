"""Torture: files written safely and as a set.

Safely: a symlink planted where a temporary file used to be made (`.NAME.tmp`) is never written
through, by any writer (run.json, export, `moot new`, `schema --out`, a report); an attacker who
guesses the next temporary name finds the file is made under another; `moot new` never replaces
what is at its name. As a set: a report killed at random moments while it replaces an older one
leaves the older one whole or the new one whole, never a mix; a report of another shape leaves no
file of the one it replaced; a folder of other files is refused, not swapped away.
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest

import moot.safety.diskio as diskio
from torture_support import (assert_clean, case, files_of, handled, moot, moot_process, scripted_batches, tried,
                             write)

SECRET_TEXT = "the victim's own words\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two finished COLA batches (scripted model) and a conference run to report and export."""
    directory = scripted_batches(tmp_path_factory.mktemp("runs"), ("one", "--limit", 6), ("two", "--limit", 4))
    ran = moot("drug_policy", "--model", "scripted", "--out", directory / "conference", "--quiet")
    assert ran.code == 0, ran.err
    return directory


def victim(tmp_path) -> Path:
    return write(tmp_path / "victim.txt", SECRET_TEXT)


def plant(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)


# writer -> (what it writes, the old predictable temporary name beside it, argv)
def writers(runs: Path, tmp: Path) -> dict:
    return {
        "run.json": (tmp / "run" / "run.json", tmp / "run" / ".run.json.tmp",
                     [runs / "cola.yaml", "--dataset", runs / "data.yaml", "--out", tmp / "run", "--quiet",
                      "--model", "scripted"]),
        "export": (tmp / "doc.html", tmp / ".doc.html.tmp", ["export", runs / "one", "--out", tmp / "doc.html"]),
        "new": (tmp / "sc" / "mine.yaml", tmp / "sc" / ".mine.yaml.tmp",
                ["new", "--protocol", "cola", "mine", "--dir", tmp / "sc"]),
        "schema --out": (tmp / "schema.json", tmp / ".schema.json.tmp", ["schema", "--out", tmp / "schema.json"]),
        "report": (tmp / "report" / "report.md", tmp / "report" / "report.md", ["report", runs / "one", "--out",
                                                                               tmp / "report"]),
    }


@pytest.mark.parametrize("writer", ["run.json", "export", "new", "schema --out", "report"])
def test_a_symlink_planted_where_a_file_is_written_is_never_written_through(writer, runs, tmp_path):
    """(The report's own files are planted: a report replaces its folder whole.)"""
    target = victim(tmp_path)
    written, planted, argv = writers(runs, tmp_path)[writer]
    plant(planted, target)
    with case("bad inputs", "files"):
        ran = moot(*argv)
        assert ran.code == 0, ran.err
        assert_clean(ran, max_err_lines=0)
        assert target.read_text() == SECRET_TEXT
        assert written.is_file() and not written.is_symlink() and written.stat().st_size > 0
        assert not [p for p in written.parent.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]


@pytest.mark.parametrize("planted", ["symlink", "dangling symlink", "file"])
def test_a_guessed_temporary_name_is_never_used(planted, tmp_path, monkeypatch):
    """An attacker who guesses the next temporary name and plants something there: the file is
    made under another name (the first name drawn is the guessed one)."""
    target = victim(tmp_path)
    guess = "0123456789abcdef"
    names = iter([guess])
    drawn = diskio.secrets.token_hex
    monkeypatch.setattr(diskio.secrets, "token_hex", lambda n: next(names, None) or drawn(n))
    trap = tmp_path / f".out.txt.{guess}.tmp"
    if planted == "file":
        write(trap, SECRET_TEXT)
    else:
        os.symlink(target if planted == "symlink" else tmp_path / "nowhere", trap)
    with case("bad inputs", "files"):
        diskio.write_atomic(tmp_path / "out.txt", "new text\n")
        assert (tmp_path / "out.txt").read_text() == "new text\n"
        assert target.read_text() == SECRET_TEXT
        assert not (tmp_path / "nowhere").exists()
        assert os.path.lexists(trap) and (planted != "file" or trap.read_text() == SECRET_TEXT)


@pytest.mark.parametrize("there", ["file", "folder", "dangling symlink"])
def test_new_never_replaces_what_is_at_its_name(there, tmp_path):
    path = tmp_path / "sc" / "mine.yaml"
    path.parent.mkdir()
    if there == "file":
        write(path, SECRET_TEXT)
    elif there == "folder":
        path.mkdir()
    else:
        os.symlink(tmp_path / "nowhere.yaml", path)
    with case("bad inputs", "files"):
        ran = moot("new", "--protocol", "cola", "mine", "--dir", tmp_path / "sc")
        assert ran.code == 2, ran.err
        assert ran.err_lines == [f"error: {path} exists; choose another NAME or --dir"]
        assert not (tmp_path / "nowhere.yaml").exists()
        assert there != "file" or path.read_text() == SECRET_TEXT
        assert [p.name for p in path.parent.iterdir()] == ["mine.yaml"]


def report_of(folder: Path) -> dict[str, bytes]:
    """A report folder's files (relative names) and report.md's text."""
    found = {str(p.relative_to(folder)): b"" for p in files_of(folder)}
    found["report.md"] = (folder / "report.md").read_bytes()
    return found


@pytest.mark.slow
def test_a_report_killed_at_random_moments_is_one_report_or_the_other_never_a_mix(runs, tmp_path):
    """The older report has one run; the newer, three (more plots, another report.md). After
    each SIGKILL the folder is the older report whole or the newer whole."""
    newer = ["report", runs / "one", runs / "two", runs / "conference"]
    for argv, name in ((["report", runs / "one"], "older"), (newer, "newer")):
        assert moot(*argv, "--out", tmp_path / name).code == 0
    older, newest = report_of(tmp_path / "older"), report_of(tmp_path / "newer")
    assert older != newest
    out = tmp_path / "report"
    assert moot("report", runs / "one", "--out", out).code == 0
    moments = random.Random("moot-report")
    kills = 0
    for _ in range(8):
        proc = moot_process(*newer, "--out", out)
        time.sleep(moments.uniform(0.3, 2.5))
        killed = proc.poll() is None
        if killed:
            proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        tried("kills")
        found = report_of(out)
        assert found in (older, newest), sorted(found)
        handled("kills")
        kills += killed
        if found == newest:  # back to the older one for the next kill
            assert moot("report", runs / "one", "--out", out).code == 0
    assert kills >= 4, "too few kills struck while the report was being written"
    assert moot(*newer, "--out", out).code == 0
    assert report_of(out) == newest
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".report.")] == []  # abandoned ones removed


def test_a_report_of_another_shape_leaves_nothing_of_the_one_it_replaced(runs, tmp_path):
    out = tmp_path / "report"
    assert moot("report", runs / "conference", "--out", out).code == 0
    assert (out / "conference.csv").exists()
    with case("bad inputs", "files"):
        ran = moot("report", runs / "one", "--out", out)
        assert ran.code == 0, ran.err
        assert not (out / "conference.csv").exists()
        assert moot("report", runs / "one", "--out", tmp_path / "fresh").code == 0
        assert report_of(out) == report_of(tmp_path / "fresh")


def test_a_report_into_a_folder_of_other_files_is_refused_and_nothing_is_lost(runs, tmp_path):
    out = tmp_path / "mine"
    write(out / "notes.txt", SECRET_TEXT)
    write(out / "report.md", "my own report\n")
    with case("bad inputs", "files"):
        ran = moot("report", runs / "one", "--out", out)
        assert ran.code == 2, ran.err
        assert ran.err_lines == [f"error: {out}: holds files that are not a report's (notes.txt); choose another "
                                 "--out (an existing report folder is replaced whole)"], ran.err
        assert {p.name: p.read_text() for p in out.iterdir()} == {"notes.txt": SECRET_TEXT,
                                                                  "report.md": "my own report\n"}
