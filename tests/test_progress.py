"""Progress you can trust: a batch's status line moves with every recorded model call and its ETA
counts calls once a unit has finished; a single item streams its turns like a conference."""

from __future__ import annotations

import io
import re
import sys

import pytest

import moot.models  # noqa: F401  first: `import moot.api.console` alone meets an import cycle through moot.models
from moot.cli import main
from moot.api.console import BatchStatus
from moot.engine.progress import CallProgress
from moot.log.events import Call, RunFinished, RunStarted


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def started() -> RunStarted:
    return RunStarted(run_id="r", protocol="cola", scenario_path="s.yaml", scenario_sha256="x", scenario={},
                      models={})


def call(role: str = "judger", stage: str = "conclusion") -> Call:
    return Call(role=role, stage=stage, model="scripted", messages=[], reply="")


def test_calls_make_the_eta_once_a_unit_finished():
    progress = CallProgress(total=5, done=1)
    assert progress.seen([started(), call("linguist", "analysis"), call(), call()])
    assert progress.eta(10.0) is None and progress.text() == "calls 3 in flight (judger conclusion)"
    progress.seen([RunFinished(status="completed", stop_reason="done", totals={"calls": 3})])
    assert progress.per_unit == 3 and progress.done == 2
    progress.seen([started(), call("linguist", "analysis")])
    # 4 calls in 10 s; still expected: 3 calls x 3 units left, less the 1 the unit in flight made.
    assert progress.eta(10.0) == pytest.approx((3 * 3 - 1) * 10.0 / 4)
    assert progress.text() == "calls 1/3 in flight (linguist analysis)"
    assert not progress.seen([])


def test_the_status_line_moves_with_every_call_on_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    monkeypatch.setattr(BatchStatus, "REDRAW_S", 0.0)
    errors = Terminal()
    monkeypatch.setattr(sys, "stderr", errors)
    assert main(["run", "cola", "--dataset", "demo-stance", "--limit", "3", "--model", "scripted",
                 "--out", str(tmp_path / "run")]) == 0
    monkeypatch.undo()
    lines = [part for part in errors.getvalue().split("\r\x1b[2K") if part.strip()]
    counts = [int(m.group(1)) for m in (re.search(r"· calls (\d+)", line) for line in lines) if m]
    assert list(dict.fromkeys(counts))[:8] == list(range(8))  # 7 calls an item: each redraws the line, counting up
    assert any(re.search(r"^\[1/3\] ETA \d+s .* · calls \d+/7 in flight", line) for line in lines)


def test_a_single_item_streams_its_turns_on_a_terminal(tmp_path, monkeypatch):
    out = Terminal()
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["run", "cola", "--model", "scripted:BASE", "--out", str(tmp_path / "one")]) == 0
    monkeypatch.undo()
    shown = out.getvalue()
    assert "=== Analysis ===" in shown and "[analysis R1] " in shown and "(analysis …):\nThe post (scripted)" in shown
    assert "closing" not in shown.lower()


def test_an_experiment_shows_its_cells_units_calls_and_the_cell_running(tmp_path, monkeypatch):
    """The grid's status line: the single run's, over every cell, headed by the cells done and the
    cell running; its calls count on from cell to cell."""
    monkeypatch.setenv("COLUMNS", "300")
    monkeypatch.setattr(BatchStatus, "REDRAW_S", 0.0)
    errors = Terminal()
    monkeypatch.setattr(sys, "stderr", errors)
    assert main(["run", "debate", "--dataset", "demo-stance", "--limit", "2", "--model", "scripted", "--no-cache",
                 "--vary", "rounds=0,1", "--out", str(tmp_path / "grid")]) == 0
    monkeypatch.undo()
    lines = [part for part in errors.getvalue().split("\r\x1b[2K") if part.strip()]
    shown = [re.match(r"cells (\d)/2(?:, running (\S+))? · \[(\d)/4\] ETA \S+ calls=(\d+) ", line) for line in lines]
    assert all(shown), lines
    cells, running, units, calls = zip(*((int(m[1]), m[2], int(m[3]), int(m[4])) for m in shown if m))
    assert list(calls) == sorted(calls) and list(units) == sorted(units) and list(cells) == sorted(cells)
    assert {"rounds-0/demo-stance/scripted/seed-0", "rounds-1/demo-stance/scripted/seed-0"} <= set(running)
    assert (cells[-1], units[-1]) == (2, 4) and calls[-1] > max(c for c, r in zip(calls, running)
                                                                if r and r.startswith("rounds-0"))
    assert any(re.search(r"running rounds-1\S+ · \[2/4\] ETA \d+s .* · calls \d+/\d+ in flight", line) for line in lines)


def test_an_experiment_off_a_terminal_shows_a_line_per_unit(tmp_path, monkeypatch, capsys):
    assert main(["run", "debate", "--dataset", "demo-stance", "--limit", "2", "--model", "scripted",
                 "--vary", "rounds=0,1", "--out", str(tmp_path / "grid")]) == 0
    captured = capsys.readouterr()
    assert re.findall(r"(?m)^cells (\d)/2.*?\[(\d)/4\]", captured.err) == [
        ("0", "0"), ("0", "0"), ("0", "1"), ("0", "2"), ("1", "2"), ("1", "3"), ("1", "4")]
    assert "rounds-1/demo-stance/scripted/seed-0: completed (2/2 items)" in captured.out
