"""Shared fixtures (keep this minimal: only fixtures used by several test files) and the torture
figures printed at the end of a session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def machine_answers(tmp_path_factory):
    """moot's per-machine answers (whether llama.cpp's extra buffers are safe here) are found anew
    in each session, never read from the user's cache: tests must not depend on what an earlier
    run left there. The check runs once, for real, in a child process. A llama-server built into
    the user's cache (`moot llama-server --build`) is still used."""
    from moot.models.backends.local.llama_server import cached_binary

    if cached_binary().is_file():
        os.environ.setdefault("MOOT_LLAMA_SERVER", str(cached_binary()))
    os.environ["MOOT_CACHE_DIR"] = str(tmp_path_factory.mktemp("moot-cache"))


@pytest.fixture
def make_scenario(tmp_path):
    """Write a small conference scenario (scripted models) and return its path.

    Agents: Moderator, Alice, Bob[, Carol, Dave] (participants), Judge, Evaluator.
    """

    def make(topics: int = 2, participants: int = 2, judge: bool = True, evaluator: bool = True,
             max_rounds: int = 3, max_messages: int = 200, extra: str = "",
             name: str = "scenario.yaml") -> Path:
        people = ["Alice", "Bob", "Carol", "Dave"][:participants]
        lines = ["title: Test conference", "task: Decide the test questions.", "topics:"]
        lines += [f"  - topic number {i + 1}" for i in range(topics)]
        lines += ["moderator:", "  name: Moderator", "participants:"]
        lines += [f"  - name: {p}\n    persona: {p} the tester." for p in people]
        if judge:
            lines += ["judge:", "  name: Judge"]
        if evaluator:
            lines += ["evaluator:", "  name: Evaluator"]
        lines += ["models:", "  default: scripted", "limits:", f"  max_rounds_per_topic: {max_rounds}",
                  f"  max_messages: {max_messages}", "retry:", "  attempts: 3", "  backoff_s: 0"]
        if not judge:
            lines += ["routing:", "  agreement: moderator"]
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
        return path

    return make


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The torture tests' figures (fault modes, kills, bad inputs): see tests/torture_support.py."""
    from torture_support import report_figures

    report_figures(terminalreporter, config)
