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
from typing import Optional, Sequence, TextIO

from moot.api.replaying import open_replay, unit_states
from moot.api.saved import SavedRun, open_run
from moot.cli.options import Parser, summary
from moot.api.streams import silence
from moot.errors import EXIT_OK, EXIT_USAGE
from moot.safety.neutral import terminal_safe


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


def run(argv: Sequence[str], stream: Optional[TextIO] = None) -> int:
    try:
        return _run(parser().parse_args(argv), stream or sys.stdout)
    except BrokenPipeError:  # `replay ... | head` or quitting a pager is not an error
        silence(sys.stdout)
        return EXIT_OK


def _run(args: argparse.Namespace, out: TextIO) -> int:
    saved = open_run(args.run)
    if args.unit is None and len(saved) != 1:
        return list_units(saved, out)
    replay = open_replay(saved, args.unit)
    if args.part is not None and not 1 <= args.part <= replay.parts:
        have = f"topics 1..{replay.parts}" if replay.parts else "no topics"
        print(f"error: --topic {args.part}: this run has {have}", file=sys.stderr)
        return EXIT_USAGE
    color = False if args.no_color or os.environ.get("NO_COLOR") else None
    replay.play(out, speed=None if args.no_delay else args.speed, part=args.part, from_turn=args.from_turn,
                color=color)
    return EXIT_OK


def list_units(saved: SavedRun, out: TextIO) -> int:
    """A batch: its units and how each ended; replay one with --unit."""
    print(f"{saved.path}: {len(saved)} units; replay one with --unit ID", file=out)
    for unit, state in unit_states(saved):
        print(terminal_safe(f"  {unit}  {state}"), file=out)
    return EXIT_OK
