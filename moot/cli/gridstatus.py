"""What `moot run EXPERIMENT` shows while its cells run: the single run's status line
(moot.api.console.BatchStatus) over the whole grid, headed by the cells done and the cell running.

    cells 1/4, running rounds-2/demo-stance/default/seed-0 · [9/24] ETA 41s calls=63 cached=0 ...

Its units, ETA, calls, cache hits and tokens count every cell of this invocation (the units a cell
finished before are counted done as the cell opens); on a terminal it is redrawn with every
recorded call and carries the in-flight calls and the latest turn, as a single run's line does;
elsewhere it is one line per finished unit. The line each cell ends with is printed between.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import TYPE_CHECKING, Optional, TextIO

from moot.api.console import BatchStatus
from moot.api.running import EngineStats
from moot.safety.neutral import terminal_safe

if TYPE_CHECKING:
    from moot.api.running import Running, Watch, Watcher
    from moot.experiment.api import Cell

CLEAR = "\r\x1b[2K"


class CellsLine(BatchStatus):
    """BatchStatus over the grid's units, its counters summed over the cells."""

    def __init__(self, cells: int, units: int, stream: Optional[TextIO] = None):
        self.cells, self.cells_done, self.running = cells, 0, ""
        self.before = EngineStats()  # the counters of the cells that ended
        self.live: dict[str, EngineStats] = {}  # of the cells running, by key
        super().__init__(units, 0, EngineStats(), stream)

    def enter(self, key: str, running: "Running") -> None:
        """A cell opens: its units done before count as done, its engine's counters as live (with
        --batch every cell is open at once)."""
        self.live[key] = running.stats
        self.running, self.on_closed = terminal_safe(key if len(self.live) == 1 else f"{len(self.live)} cells"), running.stop
        self.done, self.first = self.done + running.done, self.first + running.done
        self.progress.done += running.done
        self.show(force=True)

    def leave(self, key: str) -> None:
        """The cell's units are done: its counters join the ended cells'."""
        self.before = dataclasses.replace(added(self.before, self.live.pop(key)), paces=[])  # paces of cells running
        self.running = terminal_safe(next(iter(self.live))) if len(self.live) == 1 else \
            f"{len(self.live)} cells" if self.live else ""
        self.cells_done += 1

    def counts(self) -> EngineStats:
        total = self.before
        for live in self.live.values():
            total = added(total, live)
        return total

    def clear(self) -> None:
        """On a terminal, the line is wiped (a cell's own line goes there)."""
        if self.stream.isatty() and not self.closed:
            self._write(CLEAR)

    def line(self) -> str:
        running = f", running {self.running}" if self.running else ""
        return f"cells {self.cells_done}/{self.cells}{running} · {super().line()}"


def added(one: EngineStats, other: EngineStats) -> EngineStats:
    """Two engines' counters summed (their batches are one batcher's: either's)."""
    return EngineStats(one.backend_calls + other.backend_calls, one.cache_hits + other.cache_hits,
                       one.prompt_tokens + other.prompt_tokens, one.completion_tokens + other.completion_tokens,
                       cost=one.cost + other.cost, paces=one.paces + other.paces, batch=one.batch or other.batch)


class GridStatus:
    """A GridWatch (moot.experiment.api.run_experiment's `watch`) for the command line: one CellsLine for the grid."""

    def __init__(self, stream: Optional[TextIO] = None):
        self.stream = stream or sys.stderr
        self.status: Optional[CellsLine] = None

    def planned(self, cells: int, units: int) -> None:
        self.status = CellsLine(cells, units, self.stream)

    def cell(self, cell: "Cell") -> "Watch":
        from moot.api.running import Watcher

        def start(running: "Running") -> "Watcher":
            status = self.status
            assert status is not None  # the grid tells what it plans before its first cell
            status.enter(cell.key, running)
            return Watcher(status, status.update, lambda: status.leave(cell.key))

        return start

    def report(self, cell: "Cell", text: str) -> None:
        """A line about a cell (it ended, it was re-scored), on stdout below the status line."""
        if self.status is not None:
            self.status.clear()
        print(terminal_safe(text), flush=True)
        if self.status is not None and self.stream.isatty():
            self.status.show(force=True)

    def close(self) -> None:
        if self.status is not None:
            self.status.close()
