"""Torture: SIGKILL at random moments, then the same command again, until the run completes —
for a conference and for a dataset batch, against a slow loopback server.

A kill is survived when, after it, every transcript and results.jsonl still loads (strictly), the
next invocation sends no call whose reply had been recorded, and the run finally completes with
exactly the results and turns of an uninterrupted run.
"""

from __future__ import annotations

import random
import signal
import time

import pytest

from backend_support import loopback_only  # noqa: F401
from fault_server import FaultServer
from moot.engine.folder import read_results
from torture_support import (  # noqa: F401 - files: a fixture
    files, handled, moot, moot_process, outcome_of, recorded_signatures, remote, tried,
)

KILLS = 6  # per loop
DELAY = {"conference": 0.1, "batch": 0.03}  # seconds per reply: every loop outlasts its kills


def conference_argv(directory, url):
    return [directory / "conference.yaml", "--out", directory / "run", "--quiet", *remote(url)]


def batch_argv(directory, url):
    return [directory / "cola.yaml", "--dataset", directory / "data.yaml", "--out", directory / "run",
            "--quiet", "--concurrency", 2, *remote(url)]


ARGV = {"conference": conference_argv, "batch": batch_argv}


def uninterrupted(directory, argv) -> dict:
    with FaultServer("ok") as server:
        ran = moot(*argv(directory, server.url))
    assert ran.code == 0, ran.err
    found = outcome_of(directory / "run")
    (directory / "run").rename(directory / "uninterrupted")
    return found


def state_after_kill(folder) -> set:
    """What a killed run left: it must load strictly; returns the calls it had finished."""
    if (folder / "results.jsonl").exists():
        read_results(folder)
    return recorded_signatures(folder) if folder.exists() else set()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["conference", "batch"])
def test_killed_at_random_moments_then_resumed_to_the_uninterrupted_run(kind, files):
    argv = ARGV[kind]
    expected = uninterrupted(files, argv)
    folder = files / "run"
    moments = random.Random(f"moot-{kind}")  # the same moments on every run of the suite
    kills = 0
    with FaultServer("ok", delay=DELAY[kind]) as server:
        finished: set = set()  # the calls recorded when the last kill struck
        while True:
            before = len(server.requests)
            proc = moot_process(*argv(files, server.url))
            killing = kills < KILLS
            if killing:  # somewhere in the run's model calls (not its start-up)
                while len(server.requests) == before and proc.poll() is None:
                    time.sleep(0.005)
                time.sleep(moments.uniform(0, 0.4))
                killing = proc.poll() is None
                if killing:
                    proc.send_signal(signal.SIGKILL)
            out, err = proc.communicate(timeout=120)
            assert not finished & set(server.signatures(before)), "a finished call was sent again after a kill"
            if not killing:
                assert proc.returncode == 0, err
                break
            assert proc.returncode == -signal.SIGKILL
            kills += 1
            tried("kills")
            finished = state_after_kill(folder)
    assert kills == KILLS, "the run finished before every kill was made"
    assert outcome_of(folder) == expected
    handled("kills", kills)
