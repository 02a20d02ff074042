"""A run on text streams as the command line shows it: one unit live (its turns as they are
recorded; on a terminal as the model writes them), many as one status line, and what its end says
(`show_end`). A script or a notebook shows a run the same way, with a watch built of these
(`moot.run(..., watch=...)`: a `Watcher(LivePrinter(...))` or `Watcher(status, status.update,
status.close)`). A reader that goes away (`| head`) stops the run, resumably (`on_closed`).
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import Any, Callable, Optional, TextIO

from moot.api.running import EngineStats, PreparedRun, RunResult
from moot.api.streams import silence
from moot.views.console import ConsolePrinter
from moot.log.events import EventBase
from moot.metrics.classification import UNPARSED, summarize
from moot.contract.protocol import Protocol, S
from moot.contract.registry import AnyProtocol
from moot.engine.folder import RunFolder
from moot.kit._context import Speaking
from moot.engine.progress import CallProgress
from moot.engine.runner import BatchOutcome, UnitResult
from moot.safety.neutral import terminal_safe


OUTPUT_CLOSED = "output closed"
OnClosed = Optional[Callable[[str], None]]


def output_closed(stream: TextIO, on_closed: OnClosed) -> None:
    """The reader of our output went away (`moot run ... | head`): write nothing more there, and
    end the run as interrupted, resumable (`on_closed`: moot.engine.runner.Stop.request)."""
    silence(stream)
    if on_closed is not None:
        on_closed(OUTPUT_CLOSED)


class LivePrinter:
    """Prints one unit's events as they are recorded (a conference's turns, an item's stages), as
    its protocol's view reads them. On a terminal, a turn whose protocol says when it starts shows
    who speaks at once and its text as the model writes it, replaced by the turn as recorded
    (moot.views.console); elsewhere only recorded turns."""

    def __init__(self, protocol: Protocol[S], scenario: S, stream: Optional[TextIO] = None,
                 on_closed: OnClosed = None):
        view = protocol.view_of(scenario.model_dump(mode="json"))
        speakers = [name for _, name in view.speakers(scenario.roles())]
        self.printer = ConsolePrinter(view, stream, speakers=speakers)
        self.on_closed, self.closed = on_closed, False

    def __call__(self, events: list[EventBase]) -> None:
        self._guarded(self.printer, events)

    def speaking(self, turn: Speaking) -> Optional[Callable[[str], None]]:
        """A turn starts: show who speaks, and return where its text goes (a terminal only)."""
        if self.closed or not self.printer.stream.isatty():
            return None
        self._guarded(self.printer.begin, turn.speaker, turn.action, turn.where, turn.part, turn.round)
        return lambda text: self._guarded(self.printer.stream_text, text)

    def _guarded(self, show: Callable[..., None], *args: Any) -> None:
        if self.closed:
            return
        try:
            show(*args)
        except BrokenPipeError:
            self.closed = True
            output_closed(self.printer.stream, self.on_closed)


class BatchStatus:
    """One status line on stderr: units done/total, ETA, calls, cache hits, tokens, unparsed, failed,
    and on a terminal who speaks in the latest conference turn. On a terminal it redraws in place
    (at most 5 times a second, cut to the terminal's width); otherwise one line per unit."""

    REDRAW_S = 0.2  # on a terminal, the line is redrawn at most this often

    def __init__(self, total: int, done: int, stats: EngineStats, stream: Optional[TextIO] = None,
                 on_closed: OnClosed = None):
        self.total, self.done, self.first, self.stats = total, done, done, stats
        self.stream = stream or sys.stderr
        self.on_closed, self.closed = on_closed, False
        self.unparsed = self.failed = 0
        self.turn = ""  # the latest turn started: `seed-1: Dr. Weber (speak, T1 R2)`
        self.progress = CallProgress(total, done)
        self.started, self._last = time.monotonic(), 0.0
        self.show(force=True)

    def __call__(self, events: list[EventBase]) -> None:
        """Recorded events: the line counts calls as they finish (redrawn on a terminal)."""
        if self.progress.seen(events) and self.stream.isatty():
            self.show()

    def speaking(self, turn: Speaking) -> None:
        """A turn starts: the line says so (a terminal only). Its text is not shown."""
        if not self.stream.isatty():  # elsewhere the line never shows the turn
            return None
        self.turn = terminal_safe(f"{turn.unit}: {turn.label} ({turn.action}, {turn.where})")
        self.show()
        return None

    def update(self, result: UnitResult) -> None:
        if result.status == "completed":
            self.done += 1
            self.unparsed += bool(result.outcome and result.outcome.prediction == UNPARSED)
        else:
            self.failed += 1
        self.turn = ""
        self.show(force=not self.stream.isatty())

    def line(self) -> str:
        new = self.done - self.first
        left = self.total - self.done
        elapsed = time.monotonic() - self.started
        seconds = self.progress.eta(elapsed)  # by calls, once a unit finished; else by units
        seconds = seconds if seconds is not None else elapsed / new * left if new else None
        eta = f"{seconds:.0f}s" if seconds is not None else "?"
        failed = f" failed={self.failed}" if self.failed else ""
        stats = self.counts()
        pace = (f" cost=${stats.cost:.4f}" if stats.cost else "") + (f" {stats.pace}" if stats.pace else "")
        batch = f" {stats.batch.text()}" if stats.batch is not None else ""  # --batch: waves, progress, waiting
        return (f"[{self.done}/{self.total}] ETA {eta} calls={stats.backend_calls} cached={stats.cache_hits} "
                f"tokens={stats.tokens} unparsed={self.unparsed}{failed}{pace}{batch}")

    def counts(self) -> EngineStats:
        """The calls, cache hits and tokens the line shows."""
        return self.stats

    def show(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.closed or (not force and now - self._last < self.REDRAW_S):
            return
        self._last = now
        if self.stream.isatty():
            line = f"{self.line()} · {self.progress.text()}" + (f" · {self.turn}" if self.turn else "")
            self._write("\r\x1b[2K" + line[:max(20, shutil.get_terminal_size().columns - 1)])
        else:
            self._write(self.line() + "\n")

    def close(self) -> None:
        if self.stream.isatty() and not self.closed:
            self.turn = ""
            self.show(force=True)
            self._write("\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:
            self.closed = True
            output_closed(self.stream, self.on_closed)


def stats_line(protocol: AnyProtocol, folder: RunFolder, outcome: BatchOutcome, stats: EngineStats) -> str:
    """The last line of a run: `run: DIR items=N backend_calls=N cache_hits=N unparsed=N [failed=N]`."""
    unparsed = sum(1 for r in outcome.rows() if r.prediction == UNPARSED)
    units = protocol.units.noun
    failed = f" failed={len(outcome.failed)}" if outcome.failed else ""
    return (f"run: {folder.path} {units}={outcome.done} backend_calls={stats.backend_calls} "
            f"cache_hits={stats.cache_hits} unparsed={unparsed}{failed}")


def print_failures(outcome: BatchOutcome, err: TextIO) -> None:
    """A line per failed unit (the units that failed for the reason the batch stopped share the
    stop's line), then what to do."""
    failed = [f for f in outcome.failed if f.cause != outcome.stopped]
    for one in failed[:20]:
        print(terminal_safe(f"{one.unit.id} {one.status}: {one.cause}"), file=err)
    if len(failed) > 20:
        print(f"... and {len(failed) - 20} more", file=err)
    if outcome.stopped:
        then = (f"{outcome.continues or 'run the same command again to continue'}; finished work is kept"
                if outcome.resumes
                else "no retry can mend this; fix it and run again")
        print(f"stopped early: {terminal_safe(outcome.stopped)} ({then})", file=err)
    elif outcome.failed:
        print("failed: run the same command again to continue (finished work is kept)", file=err)


def show_end(prepared: PreparedRun, result: RunResult, out: Optional[TextIO] = None,
             err: Optional[TextIO] = None) -> None:
    """What the end of a run says on `out` (default stdout), its failures on `err` (stderr): one
    unit, its protocol's view's ending and its transcript; many, their metrics or each unit's line;
    then the run's line."""
    out, err = out or sys.stdout, err or sys.stderr
    folder = RunFolder(result.folder)
    if prepared.planned == 1:
        print_unit_end(prepared.protocol, folder, next(prepared.plan.units()).id, result.outcome, result.stats, out, err)
    else:
        print_batch_end(prepared.protocol, folder, result.outcome, result.stats, result.metric, out, err)


def print_unit_end(protocol: Protocol[S], folder: RunFolder, unit_id: str, outcome: BatchOutcome,
                   stats: EngineStats, out: TextIO, err: TextIO) -> None:
    """One unit: what its protocol's view prints at its end (a conference's summary, an item's
    label and explanation); its transcript."""
    from moot.log.transcript import load

    path = folder.transcript_path(unit_id)
    if path.exists():
        transcript = load(path)
        print(file=out)
        for line in protocol.view_of(transcript.started.scenario).ending(transcript):
            print(terminal_safe(line), file=out)
        print(terminal_safe(f"transcript: {path}"), file=out)
    print_failures(outcome, err)
    print(terminal_safe(stats_line(protocol, folder, outcome, stats)), file=out)


def print_batch_end(protocol: AnyProtocol, folder: RunFolder, outcome: BatchOutcome, stats: EngineStats,
                    metric: Optional[str], out: TextIO, err: TextIO) -> None:
    """Many units: the metrics of the labelled items (else each unit's line, as its view gives it);
    the run line."""
    scored = [r for r in outcome.rows() if r.labelled]
    meta = folder.record()
    if scored and meta.labels and metric:
        report = summarize([str(r.gold) for r in scored], [r.prediction for r in scored], meta.labels, metric=metric)
        print(terminal_safe(report.format()), file=out)
    elif not protocol.units.items:
        view = protocol.view_of(meta.scenario_fields)
        for row in outcome.rows():
            print(terminal_safe(view.row(row)), file=out)
    skipped = meta.skipped_rows or {}
    if skipped:
        print(terminal_safe("skipped rows: " + ", ".join(f"{n} {why}" for why, n in skipped.items())), file=out)
    print_failures(outcome, err)
    print(terminal_safe(f"results: {folder.results_path}"), file=out)
    print(terminal_safe(stats_line(protocol, folder, outcome, stats)), file=out)
