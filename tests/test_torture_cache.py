"""Torture: the reply cache tells "busy" from "broken" (issue 32, class 7). A cache another
process holds is waited for, then is one line naming that process (exit 3), never called damaged
nor to be deleted; held briefly, the run waits and goes on. Only a damaged cache is called
damaged; a folder where the cache file goes is one line."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from torture_support import SCRIPTED_COLA, assert_clean, case, dataset, moot, write

from moot.models import cache as reply_cache

HOLD = """\
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("CREATE TABLE IF NOT EXISTS held (a)")
db.execute("BEGIN EXCLUSIVE")
db.execute("INSERT INTO held VALUES (1)")
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("ROLLBACK")
"""


@pytest.fixture
def run_args(tmp_path):
    write(tmp_path / "cola.yaml", SCRIPTED_COLA)
    dataset(tmp_path)
    (tmp_path / "run").mkdir()
    return ["run", tmp_path / "cola.yaml", "--dataset", tmp_path / "data.yaml", "--out", tmp_path / "run", "--quiet"]


def holding(path, seconds: float) -> subprocess.Popen:
    """Another process holding the cache at `path` for `seconds`, once it says so."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    return holder


def test_a_cache_held_by_another_process_is_waited_for_then_named(tmp_path, run_args, monkeypatch):
    with case("fault modes", "cache"):
        monkeypatch.setattr(reply_cache, "BUSY_WAIT_S", 1.0)
        holder = holding(tmp_path / "run" / "cache.sqlite", 60)
        try:
            started = time.monotonic()
            ran = moot(*run_args)
            assert time.monotonic() - started >= 1.0  # it waited
        finally:
            holder.kill()
            holder.wait()
        assert ran.code == 3, ran.err
        assert_clean(ran, max_err_lines=1)
        assert f"in use by process {holder.pid} (python" in ran.err and "not damaged" in ran.err
        assert "delete" not in ran.err and "usable" not in ran.err
        again = moot(*run_args)  # once it has finished, the same command runs
        assert again.code == 0, again.err


def test_a_cache_held_briefly_is_waited_for(tmp_path, run_args):
    with case("fault modes", "cache"):
        holder = holding(tmp_path / "run" / "cache.sqlite", 1.5)
        try:
            ran = moot(*run_args)
        finally:
            holder.wait()
        assert ran.code == 0, ran.err
        assert_clean(ran, max_err_lines=0)


@pytest.mark.parametrize("damage", ["junk", "a text file", "a folder"])
def test_a_damaged_cache_or_a_folder_is_one_line(tmp_path, run_args, damage):
    with case("bad inputs", "cache"):
        cache = tmp_path / "run" / "cache.sqlite"
        if damage == "a folder":
            cache.mkdir()
        else:
            write(cache, b"\x00\x13junk" * 1000 if damage == "junk" else "SQLite format 3? no.\n" * 100)
        ran = moot(*run_args)
        assert ran.code == 2, ran.err
        assert_clean(ran, max_err_lines=1)
        assert str(cache) in ran.err
        assert ("a folder where the reply cache file goes" if damage == "a folder"
                else "not a usable reply cache") in ran.err
