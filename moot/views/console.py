"""Terminal output of a run, live or replayed: one block per turn under its section's header
(a conference's topic and round, an item's stage), the lines of its companion events (a verdict,
scores), decisions and outcomes, as the unit's protocol describes them (moot.views.unit).

Every recorded string passes through `terminal_safe` before it is written: what a model (or a
dataset, or a scenario) wrote cannot move the cursor, recolour or retitle the terminal. Colours
and the cursor moves below are moot's own, added after.

Live on a terminal, a turn shows who speaks as soon as it starts and its text as it is generated
(`begin`, `stream`); when the turn is recorded, that provisional block is erased (the cursor
moved up over the rows it took) and the turn is printed as recorded: the text may have been cut
at its last full sentence, and a closed answer's probabilities are known only then. Anywhere
else (a pipe, a file, --quiet, a replay) only the recorded turns are printed.
"""

from __future__ import annotations

import shutil
import sys
import unicodedata
from typing import Optional, Sequence, TextIO

from moot.log.events import Error, EventBase, Human, Message, Outcome, RunResumed
from moot.safety.neutral import terminal_safe
from moot.views.timeline import CUT, outcome_text, seat_text
from moot.views.unit import Place, UnitView

PALETTE = ("36", "33", "32", "35", "34", "31", "96", "93")


class ConsolePrinter:
    """Prints events as they are recorded; colours only when writing to a terminal."""

    def __init__(self, view: UnitView, stream: TextIO | None = None, color: bool | None = None,
                 speakers: Sequence[str] = ()):
        stream = stream or sys.stdout  # looked up now: sys.stdout may be replaced after import
        self.view, self.stream = view, stream
        self.labels = view.labels()  # what each speaker is called in the conversation
        self.color = stream.isatty() if color is None else color
        self._place: Optional[str] = None
        self._round: Optional[tuple[str, int]] = None
        self._live: Optional[str] = None  # the provisional block of a turn in progress, as shown
        self._erased = False  # a provisional block was just erased: its blank line before it stays
        # Colours follow the recorded speaker order when known, so a replay from any turn matches.
        self._colors: dict[str, str] = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(speakers)}

    def __call__(self, events: list[EventBase]) -> None:
        for event in events:
            if isinstance(event, Message):
                self._erase()
            self.show(event)
        self.stream.flush()

    def paint(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def say(self, text: str, code: str = "") -> None:
        """One line of text from a transcript: made safe, then painted."""
        safe = terminal_safe(text)
        self.write(self.paint(safe, code) if code else safe)

    def show(self, event: EventBase) -> None:
        if isinstance(event, Message):
            self._message(event)
        elif isinstance(event, Outcome):
            self.say(f"  ⇒ {outcome_text(event, self.view.result_name)}", "1")
            if event.explanation:
                self.say(f"    {event.explanation}")
        elif (companion := self.view.companion(event)) is not None:
            self.say(f"  ⇒ {companion.line}", "1" if companion.strong else "")
        elif isinstance(event, Error):
            self.say(f"  ✗ error ({event.speaker or 'run'}): {event.cause}", "31")
        elif isinstance(event, Human) and event.fallback:
            self.say(f"  ⏱ {seat_text(event)}", "2")
        elif isinstance(event, RunResumed):
            self.write("")
            self.say(f"  ↻ run resumed: {event.turns_kept} earlier turn(s) kept", "2")

    def _headers(self, place: Place, round_: int) -> None:
        """The section's and the round's headers, when the turn starts a new one."""
        if place.key != self._place:
            self._place = place.key
            self.write("\n" + self.paint(terminal_safe(f"=== {place.title} ==="), "1;4"))
        if place.rounds and (place.key, round_) != self._round:
            self._round = (place.key, round_)
            self.write("\n" + self.paint(f"--- round {round_} ---", "2"))

    def _speaker(self, speaker: str) -> tuple[str, str]:
        """(painted, plain) name of a speaker as the conversation calls it."""
        shown = terminal_safe(self.labels.get(speaker, speaker))
        color = self._colors.setdefault(speaker, PALETTE[len(self._colors) % len(PALETTE)])
        return self.paint(shown, "1;" + color), shown

    def _message(self, m: Message) -> None:
        turn = self.view.turn(m)
        self._headers(self.view.section(m.action, m.part), m.round)
        name, _ = self._speaker(m.speaker)
        what = ", ".join([*([turn.action] if turn.action else []), *(["human"] if m.source == "human" else []),
                          f"{m.latency_s:.1f}s", *([CUT] if m.cut else [])])
        decision = f" → {m.decision}" if m.decision and turn.decision else ""
        self.write(f"{'' if self._erased else chr(10)}[{terminal_safe(turn.where)}] {name} ({terminal_safe(what)})"
                   f"{terminal_safe(decision)}:\n{terminal_safe(turn.text)}")
        self._erased = False

    # ------------------------------------------------------------------ a turn in progress
    def begin(self, speaker: str, action: str, where: str, part: Optional[int], round_: int) -> None:
        """A turn starts: its headers, then who speaks (provisional until the turn is recorded)."""
        self._headers(self.view.section(action, part), round_)
        name, plain = self._speaker(speaker)
        where = terminal_safe(where)
        self.write("")
        self.stream.write(f"[{where}] {name} ({terminal_safe(action)} …):\n")
        self._live = f"[{where}] {plain} ({action} …):\n"
        self.stream.flush()

    def stream_text(self, text: str) -> None:
        """Text of the turn in progress, as it is generated."""
        if self._live is None:
            return
        safe = terminal_safe(text)
        self._live += safe
        self.stream.write(safe)
        self.stream.flush()

    def _erase(self) -> None:
        """Remove the provisional block: up over the rows it took, then clear to the end of the screen."""
        if self._live is None:
            return
        rows = terminal_rows(self._live, shutil.get_terminal_size().columns)
        self.stream.write("\r" + (f"\x1b[{rows - 1}A" if rows > 1 else "") + "\x1b[J")
        self._live, self._erased = None, True

    def _keep(self) -> None:
        """Leave the provisional block as it is (something else is printed after it)."""
        if self._live is not None:
            if not self._live.endswith("\n"):
                self.stream.write("\n")
            self._live = None

    def write(self, text: str) -> None:
        """One printed line; a provisional block before it is kept (every printed line comes here)."""
        self._keep()
        print(text, file=self.stream)


def terminal_rows(text: str, columns: int) -> int:
    """How many terminal rows `text` takes from the start of a row (the cursor at its end): each
    line wraps at `columns`; wide characters take two columns."""
    columns = max(columns, 1)
    rows = 0
    for line in text.split("\n"):
        width = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)
        rows += max(1, -(-width // columns))
    return rows
