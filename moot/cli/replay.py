"""`moot replay RUN [--unit ID]`: show a saved run in the terminal as it happened, from its transcript.

RUN is a run folder or a transcript file. A folder with one unit (one conference, one item)
replays it; a folder with several (a batch) lists them with their outcomes, and `--unit ID`
replays one, as its protocol's view reads it (a conference its topics and rounds; an item its
input, its stages, who spoke, each decision and the outcome). Each message waits its recorded model latency
(divided by --speed) before it appears, so a replay has the rhythm of the live run without
calling any model.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Callable, Optional, Sequence, TextIO

from moot.cli.streams import silence
from moot.errors import EXIT_OK, EXIT_USAGE
from moot.cli.options import Parser, summary
from moot.contract.registry import result_name, view_of
from moot.engine.folder import holder_of
from moot.saved.source import RunSource, UnitRef, open_run
from moot.log.events import Message
from moot.log.transcript import Transcript
from moot.views.console import ConsolePrinter
from moot.views.document import unit_status
from moot.safety.neutral import terminal_safe
from moot.views.summary import summary_lines
from moot.views.timeline import Turn, grouped, input_texts, speaker_index
from moot.views.unit import UnitView


def positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot replay", description=summary(__doc__),
               epilog="examples:\n  moot replay transcripts/drug_policy\n"
                      "  moot replay transcripts/cola-demo-stance --unit stance-01 --no-delay",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="run folder or transcript file")
    p.add_argument("--unit", metavar="ID", help="which unit of a run folder to replay (default: its only one)")
    pace = p.add_mutually_exclusive_group()
    pace.add_argument("--speed", type=positive, default=1.0,
                      help="playback speed: delay = recorded latency / SPEED (default 1)")
    pace.add_argument("--no-delay", action="store_true", help="print everything at once")
    p.add_argument("--topic", type=int, metavar="N", dest="part",
                   help="replay only topic N of a conference (its part N; 1-based)")
    p.add_argument("--from-turn", type=int, default=1, metavar="N", help="start at turn N")
    p.add_argument("--no-color", action="store_true", help="no ANSI colours (also: $NO_COLOR)")
    return p


def select(turns: Sequence[Turn], part: Optional[int], from_turn: int) -> list[Turn]:
    """Turns at or after `from_turn`; with `part` (0-based) only that part's turns."""
    return [t for t in turns if t.number >= from_turn
            and (part is None or (t.message is not None and t.message.part == part))]


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


def replay(turns: Sequence[Turn], printer: ConsolePrinter, speed: Optional[float],
           sleep: Optional[Callable[[float], None]] = None) -> None:
    """Print the turns, waiting latency/speed before each message (speed None: no waiting)."""
    sleep = sleep or time.sleep
    for turn in turns:
        if speed and isinstance(turn.message, Message) and turn.message.latency_s > 0:
            sleep(turn.message.latency_s / speed)
        printer(turn.events)


def run(argv: Sequence[str], stream: Optional[TextIO] = None) -> int:
    try:
        return _run(parser().parse_args(argv), stream or sys.stdout)
    except BrokenPipeError:  # `replay ... | head` or quitting a pager is not an error
        silence(sys.stdout)
        return EXIT_OK


def _run(args: argparse.Namespace, out: TextIO) -> int:
    source = open_run(args.run)
    if args.unit is None and len(source.units) != 1:
        return list_units(source, out)
    unit = source.unit(args.unit) if args.unit is not None else source.units[0]
    transcript = unit.load()
    view = view_of(transcript.started)
    parts = view.parts()
    if args.part is not None and not 1 <= args.part <= len(parts):
        have = f"topics 1..{len(parts)}" if parts else "no topics"
        print(f"error: --topic {args.part}: this run has {have}", file=sys.stderr)
        return EXIT_USAGE
    color = False if args.no_color or os.environ.get("NO_COLOR") else None
    printer = ConsolePrinter(view, out, color, speakers=list(speaker_index(transcript, view)))
    for line in header_lines(transcript):
        printer.say(line, "2")
    for line in input_lines(transcript, view):
        printer.say(line)
    turns = [t for section in grouped(transcript, view) for t in section.turns]
    part = None if args.part is None else args.part - 1
    replay(select(turns, part, args.from_turn), printer, None if args.no_delay else args.speed)
    printer.write("")
    for line in summary_lines(transcript.events, view):
        printer.say(line)
    if transcript.finished is None:
        printer.write("Running: the run holds its folder now; this is what it has recorded so far"
                      if held(source) else "Stop: the run did not finish (the transcript ends here; it can be resumed)")
    if transcript.torn_tail:
        printer.write("(the last line was cut off mid-write and was skipped)")
    return EXIT_OK


def held(source: RunSource) -> bool:
    """Whether a moot process runs the run now (holds its folder's lock): a unit with no end is
    then running, not cut short."""
    folder = source.path if source.is_folder else source.path.parent
    return holder_of(folder) is not None


def list_units(source: RunSource, out: TextIO) -> int:
    """A batch: its units and how each ended; replay one with --unit."""
    name = result_name(source.meta.get("protocol", ""))
    print(f"{source.path}: {len(source.units)} units; replay one with --unit ID", file=out)
    running = held(source)
    for unit in source.units:
        row = unit.row or {}
        if row.get("prediction") is not None:
            gold = f" (gold {row['gold']})" if row.get("gold") is not None else ""
            status = f"{name}: {row['prediction']}{gold}"
        elif row:
            status = row.get("status", "finished")
        else:
            status = unfinished(unit, running)
        print(terminal_safe(f"  {unit.id}  {status}"), file=out)
    return EXIT_OK


def unfinished(unit: UnitRef, running: bool) -> str:
    try:
        return unit_status(unit.load(), "prediction", running)
    except ValueError as exc:
        return f"unreadable: {exc}"
