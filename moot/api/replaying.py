"""A saved run shown as it happened (`moot replay`), from its transcripts, on any text stream.

One unit is printed turn by turn as its protocol's view reads it (a conference its topics and
rounds; an item its input, its stages, who spoke, each decision and the outcome), each message
after its recorded model latency divided by a speed, so a replay has the rhythm of the live run
without calling any model. A batch's units are listed with how each ended. Nothing is written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, TextIO

from moot.api.saved import RunLike, SavedRun, SavedUnit, open_run
from moot.contract.registry import result_name, view_of
from moot.engine.folder import holder_of
from moot.errors import UsageError
from moot.log.events import Message
from moot.log.transcript import Transcript
from moot.views.console import ConsolePrinter
from moot.views.document import unit_status
from moot.views.summary import summary_lines
from moot.views.timeline import Turn, grouped, input_texts, speaker_index
from moot.views.unit import UnitView


def running(run: SavedRun) -> bool:
    """Whether a moot process runs the run now (holds its folder's lock): a unit with no end is
    then running, not cut short."""
    return holder_of(run.path if run.is_folder else run.path.parent) is not None


def unit_states(run: RunLike) -> list[tuple[str, str]]:
    """Each unit of a run (a batch) with how it ended: its result and gold label
    (`stance: favor (gold against)`), else its status, else where its transcript stops."""
    saved = open_run(run)
    name = result_name(saved.source.record.protocol_name or "")
    now = running(saved)
    return [(unit.id, _state(unit, name, now)) for unit in saved.units()]


def _state(unit: SavedUnit, name: str, now: bool) -> str:
    result = unit.result
    if result is None:
        try:
            return unit_status(unit.transcript(), "prediction", now)
        except ValueError as exc:
            return f"unreadable: {exc}"
    if result.prediction is not None:
        gold = f" (gold {result.gold})" if result.gold is not None else ""
        return f"{name}: {result.prediction}{gold}"
    return result.status or "finished"


def header_lines(transcript: Transcript) -> list[str]:
    s = transcript.started
    lines = [f"Replay of {transcript.path}: run {s.run_id} ({s.protocol}, unit {s.unit or '—'}), started {s.ts}",
             f"scenario {s.scenario_path} sha256 {s.scenario_sha256[:12]}",
             "models: " + ", ".join(f"{name}={spec}" for name, spec in s.models.items())]
    if transcript.migrated_from is not None:
        lines.append(f"(written with transcript schema version {transcript.migrated_from}; upgraded on load)")
    return lines


def input_lines(transcript: Transcript, view: UnitView) -> list[str]:
    """What the item was given (the post, the claim and its comments, the answers judged) and its
    gold label, before its turns; each line of a text indented under its label."""
    found = input_texts(transcript, view)
    lines = ["", "=== Input ==="] if found else []
    for label, text in found:
        lines += [f"{label}:", *(f"  {line}" for line in (str(text).strip().splitlines() or ["(empty)"]))]
    return lines


def select(turns: Sequence[Turn], part: Optional[int], from_turn: int) -> list[Turn]:
    """Turns at or after `from_turn`; with `part` (0-based) only that part's turns."""
    return [t for t in turns if t.number >= from_turn
            and (part is None or (t.message is not None and t.message.part == part))]


def play_turns(turns: Sequence[Turn], printer: ConsolePrinter, speed: Optional[float],
               sleep: Optional[Callable[[float], None]] = None) -> None:
    """Print the turns, waiting latency/speed before each message (speed None: no waiting)."""
    sleep = sleep or time.sleep
    for turn in turns:
        if speed and isinstance(turn.message, Message) and turn.message.latency_s > 0:
            sleep(turn.message.latency_s / speed)
        printer(turn.events)


@dataclass(frozen=True)
class Replay:
    """One unit's transcript, ready to be shown; `running`: its run holds its folder now."""

    transcript: Transcript
    view: UnitView
    running: bool

    @property
    def parts(self) -> int:
        """How many parts (a conference's topics) the unit has; `play(part=N)` shows one."""
        return len(self.view.parts())

    def play(self, out: TextIO, *, speed: Optional[float] = 1.0, part: Optional[int] = None, from_turn: int = 1,
             color: Optional[bool] = None, sleep: Optional[Callable[[float], None]] = None) -> None:
        """Print the unit to `out`: its header and input, its turns from turn `from_turn` (of part
        `part` only, 1-based), each message `latency / speed` seconds after the one before (speed
        None: at once), its summary and how it stopped. `color`: ANSI colours (None: on a terminal)."""
        if part is not None and not 1 <= part <= self.parts:
            raise UsageError(f"part {part}: the unit has {self.parts} part(s)")
        transcript, view = self.transcript, self.view
        printer = ConsolePrinter(view, out, color, speakers=list(speaker_index(transcript, view)))
        for line in header_lines(transcript):
            printer.say(line, "2")
        for line in input_lines(transcript, view):
            printer.say(line)
        turns = [t for section in grouped(transcript, view) for t in section.turns]
        play_turns(select(turns, None if part is None else part - 1, from_turn), printer, speed, sleep)
        printer.write("")
        for line in summary_lines(transcript.events, view):
            printer.say(line)
        if transcript.finished is None:
            printer.write("Running: the run holds its folder now; this is what it has recorded so far"
                          if self.running else
                          "Stop: the run did not finish (the transcript ends here; it can be resumed)")
        if transcript.torn_tail:
            printer.write("(the last line was cut off mid-write and was skipped)")


def open_replay(run: RunLike, unit: Optional[str] = None) -> Replay:
    """The unit `unit` of a run folder (None: its only unit) or a transcript file's one unit, read."""
    saved = open_run(run)
    if unit is None and len(saved) != 1:
        raise UsageError(f"{saved.path}: {len(saved)} units; name one (unit=ID)")
    transcript = (saved.unit(unit) if unit is not None else next(saved.units())).transcript()
    return Replay(transcript, view_of(transcript.started), running(saved))
