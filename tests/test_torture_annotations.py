"""Torture: annotations.jsonl is written like the transcripts (issue 32, class 5). A torn last line
is set aside before appending; two sessions of the same rater, at once, never record one thing
twice; a read-only run folder is one line whose advice names no option annotate lacks."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from torture_support import assert_clean, case, moot, scripted_batches, tmpfs  # noqa: F401 - tmpfs: a fixture

from moot.log.annotations import FILE, read_ratings

GOOD = '{"rater":"amy","unit":"u","item":"i","kind":"k","key":"q","value":"1","ts":"t","seconds":0}'


@pytest.fixture
def run(tmp_path):
    return scripted_batches(tmp_path, ("run",)) / "run"


@pytest.mark.parametrize("tail", ["half a rating", "junk bytes", "a whole rating without its newline"])
def test_a_torn_last_line_is_set_aside_before_appending(run, monkeypatch, tail):
    with case("damaged files", "annotations"):
        torn = {"half a rating": GOOD[:40], "junk bytes": "\x00\x01{{", "a whole rating without its newline": GOOD}[tail]
        (run / FILE).write_text(GOOD + "\n" + torn, encoding="utf-8")
        monkeypatch.setattr(sys, "stdin", io.StringIO("favor\n"))
        ran = moot("annotate", run, "--rater", "bob", "--limit", "1")
        assert ran.code == 0, ran.err
        assert_clean(ran, max_err_lines=0)
        lines = (run / FILE).read_text(encoding="utf-8").splitlines()
        assert all(json.loads(line) for line in lines)  # every line reads
        whole = tail == "a whole rating without its newline"
        assert [r.rater for r in read_ratings(run)] == ["amy"] * (2 if whole else 1) + ["bob"]
        aside = run / (FILE + ".torn")
        assert (not aside.exists()) if whole else aside.read_text(encoding="utf-8") == torn + "\n"


class Session:
    """`moot annotate RUN --rater amy --limit 2` as its own process, its output gathered as it comes."""

    def __init__(self, run: Path):
        self.process = subprocess.Popen([sys.executable, "-m", "moot", "annotate", str(run), "--rater", "amy",
                                         "--limit", "2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.out = b""
        threading.Thread(target=self._gather, daemon=True).start()

    def _gather(self) -> None:
        assert self.process.stdout is not None
        while chunk := self.process.stdout.read1(4096):
            self.out += chunk

    def wait_for(self, text: str) -> None:
        deadline = time.monotonic() + 60
        while text.encode() not in self.out:
            assert self.process.poll() is None and time.monotonic() < deadline, (self.out, self.process.stderr)
            time.sleep(0.05)

    def type(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode())
        self.process.stdin.flush()


def ratings_count(run: Path) -> int:
    return len(read_ratings(run))


def test_two_sessions_of_one_rater_never_rate_a_thing_twice(run):
    with case("bad inputs", "annotations"):
        first, second = Session(run), Session(run)
        first.wait_for("1/2 · unit")
        second.wait_for("1/2 · unit")  # both are asked the same first thing
        first.type("favor\n")
        deadline = time.monotonic() + 60
        while ratings_count(run) < 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        second.type("against\n")  # too late: the first session rated it; not recorded
        second.wait_for("2/2 · unit")
        first.wait_for("2/2 · unit")
        second.type("neutral\n")
        second.process.stdin.close()
        assert second.process.wait(60) == 0, second.process.stderr.read()
        first.type("favor\n")  # rated meanwhile by the second: not recorded either
        first.process.stdin.close()
        assert first.process.wait(60) == 0, first.process.stderr.read()
        rated = [(r.unit, r.item, r.value) for r in read_ratings(run)]
        assert len(rated) == len({(u, i) for u, i, _ in rated}) == 2, rated
        assert [v for _, _, v in rated] == ["favor", "neutral"]


def test_a_read_only_run_folder_is_one_line_naming_no_option_annotate_lacks(run, tmpfs, monkeypatch):
    with case("fault modes", "annotations"):
        disk, remount = tmpfs
        shutil.copytree(run, disk / "run")
        remount("ro")
        monkeypatch.setattr(sys, "stdin", io.StringIO("favor\n"))
        ran = moot("annotate", disk / "run", "--rater", "bob", "--limit", "1")
        assert ran.code == 3, ran.err
        assert_clean(ran, max_err_lines=1)
        assert "read-only" in ran.err and str(disk / "run" / FILE) in ran.err
        assert "--" not in ran.err.replace(str(disk), "")  # no option named (annotate has no --out)
