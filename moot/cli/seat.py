"""A person at the terminal (`moot run --human SEAT`): the seat's questions on stdout, answers
read from stdin; or in the browser (`--human-from browser`): each seat's link printed at the start,
a line on the terminal when the seat waits, the answer taken from the run folder's seat files
(moot.api.seats), which `moot view` writes.

The conversation so far is on screen already (the live transcript). A turn starts with a line
saying whose seat it is and where; a closed question lists its allowed answers (type one, or its
number); a free turn is several lines, ended by a line holding only `.`. stdin is read by a daemon thread,
so Ctrl-C stops the run at once (the same command continues it at the same turn), and piped
answers work as typed ones. Input is read as bytes, bounded: bytes that are not UTF-8 and an
answer longer than the seat takes (moot.api.seats.MAX_TYPED) are refused and asked again. When
the input ends, the run stops at the turn that waits (inside a free turn too: nothing half-typed
is taken), and the same command continues it there. What is shown of the scenario is
neutralised like any other text (moot.safety.neutral).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import Iterator, Optional, Sequence, TextIO

from moot.api.running import Running, Watch, Watcher
from moot.api.seats import MAX_TYPED, Asking, FolderPerson, PersonLeft, Question, open_seat
from moot.safety.neutral import terminal_safe

END = "."  # a line holding only this ends a free turn


class TerminalPerson:
    """Asks on `out`, reads from `stdin` (line by line, on a daemon thread)."""

    def __init__(self, stdin: Optional[TextIO] = None, out: Optional[TextIO] = None):
        self.stdin, self.out = stdin or sys.stdin, out or sys.stdout
        self._lines: Optional[asyncio.Queue[Optional[str]]] = None
        self._ended = False
        self._shown: Optional[Asking] = None

    def _reader(self) -> asyncio.Queue[Optional[str]]:
        if self._lines is None:
            loop, lines = asyncio.get_running_loop(), asyncio.Queue()  # type: asyncio.AbstractEventLoop, asyncio.Queue[Optional[str]]

            def read() -> None:
                for line in typed_lines(self.stdin):
                    loop.call_soon_threadsafe(lines.put_nowait, line)
                loop.call_soon_threadsafe(lines.put_nowait, None)

            threading.Thread(target=read, name="moot-seat-stdin", daemon=True).start()
            self._lines = lines
        return self._lines

    async def _line(self, asking: Asking) -> Optional[str]:
        """The next line typed; None once the input has ended (and ever after)."""
        if not self._ended:
            line = await self._reader().get()
            self._ended = line is None
            return line
        return None

    async def ask(self, asking: Asking, question: Question, problem: str) -> str:
        if asking is not self._shown:
            self._shown = asking
            self._say(f"\n── your turn · seat {asking.seat} · {asking.label} · {asking.where} · {asking.action} ──"
                      + (f"\n{asking.shown}" if asking.shown else ""))
        if problem:
            self._say(f"  (that does not read: {problem})")
        if question.kind == "choice":
            choices = "  ".join(f"{n}) {o}" for n, o in enumerate(question.options, 1))
            self._say(f"{question.prompt}\n  {choices}", prompt=True)
        elif question.kind == "score":
            low, high = question.scale or (1, 10)
            self._say(f"{question.prompt} [{low}-{high}]", prompt=True)
        elif question.lines:
            self._say(f"{question.prompt} (end with a line holding only {END!r})", prompt=True)
            return await self._text(asking)
        else:
            self._say(question.prompt, prompt=True)
        line = await self._line(asking)
        if line is None:
            raise PersonLeft(f"seat {asking.seat}: the input ended while waiting for an answer; "
                             "run the same command again to continue from this turn")
        return line

    async def _text(self, asking: Asking) -> str:
        """A free turn's lines up to the line holding only END; kept up to just past MAX_TYPED
        (the seat refuses the turn then), so memory stays bounded whatever is typed."""
        lines: list[str] = []
        size = 0
        while (line := await self._line(asking)) is not None and line != END:
            if size <= MAX_TYPED:
                lines.append(line)
                size += len(line) + 1
        if line is None:
            raise PersonLeft(f"seat {asking.seat}: the input ended inside a turn (before a line holding only "
                             f"{END!r}); run the same command again to continue from this turn")
        return "\n".join(lines)

    def _say(self, text: str, prompt: bool = False) -> None:
        self.out.write(terminal_safe(text) + ("\n> " if prompt else "\n"))
        self.out.flush()


def typed_lines(stdin: TextIO) -> Iterator[str]:
    """The lines of `stdin` without their ends, read as bytes (where it has them) and decoded as
    Python decodes names (bytes that are not UTF-8 as surrogates, which the seat refuses); a line
    longer than MAX_TYPED is cut just past it, the rest read and dropped, so memory stays bounded."""
    raw = getattr(stdin, "buffer", None)
    if raw is None:  # a text stream of its own (a test's StringIO)
        yield from (line.rstrip("\r\n") for line in stdin)
        return
    while line := raw.readline(MAX_TYPED + 1):
        if len(line) > MAX_TYPED and not line.endswith(b"\n"):
            while (rest := raw.readline(MAX_TYPED)) and not rest.endswith(b"\n"):
                pass
        yield line.decode("utf-8", "surrogateescape").rstrip("\r\n")


class BrowserPerson(FolderPerson):
    """A person answering on a seat's page of `moot view` (through the run folder's seat files);
    the terminal says when the seat waits for them, once per turn (unless quiet)."""

    def __init__(self, run: Path, quiet: bool = False, out: Optional[TextIO] = None):
        super().__init__(run)
        self.quiet, self.out = quiet, out or sys.stdout
        self._shown: Optional[Asking] = None

    async def ask(self, asking: Asking, question: Question, problem: str) -> str:
        if not self.quiet and asking is not self._shown:
            self._shown = asking
            self.out.write(terminal_safe(f"\n── seat {asking.seat} · {asking.label} · {asking.where} · {asking.action}: "
                                         "waiting for the answer in the browser ──") + "\n")
            self.out.flush()
        return await super().ask(asking, question, problem)


def opening_seats(watch: Watch, seats: Sequence[str], out: Optional[TextIO] = None) -> Watch:
    """`watch`, after each seat's token is made (or found) in the run folder, once the run holds
    it, and its link printed: a path on `moot view` serving a folder above the run's."""

    def start(running: Running) -> Watcher:
        shown = out or sys.stdout
        for seat in seats:
            token = open_seat(running.folder, seat)
            shown.write(terminal_safe(f"seat {seat}: take it in the browser at /seat/{token} on "
                                      f"`moot view {running.folder.parent}` (the run's page there links it too)")
                        + "\n")
        shown.flush()
        return watch(running)

    return start
