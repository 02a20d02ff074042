"""`replay TRANSCRIPT`: show a saved run in the terminal as it happened, from the transcript only.

Each message waits its recorded model latency (divided by --speed) before it appears, so a
replay has the rhythm of the live run without calling any model.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Callable, Optional, Sequence, TextIO

from moot.console import ConsolePrinter
from moot.summary import summary_lines
from moot.timeline import Turn, speaker_index, turns_of
from moot.transcript import Message, Transcript, load


def positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="moot replay", description=__doc__.splitlines()[0])
    p.add_argument("transcript", type=Path, help="transcript JSONL file")
    pace = p.add_mutually_exclusive_group()
    pace.add_argument("--speed", type=positive, default=1.0,
                      help="playback speed: delay = recorded latency / SPEED (default 1)")
    pace.add_argument("--no-delay", action="store_true", help="print everything at once")
    p.add_argument("--topic", type=int, metavar="N", help="replay only topic N (1-based)")
    p.add_argument("--from-turn", type=int, default=1, metavar="N", help="start at turn N")
    p.add_argument("--no-color", action="store_true", help="no ANSI colours (also: $NO_COLOR)")
    return p


def select(turns: Sequence[Turn], topic: Optional[int], from_turn: int) -> list[Turn]:
    """Turns at or after `from_turn`; with `topic` (0-based) only that topic's turns."""
    return [t for t in turns if t.number >= from_turn and (topic is None or (t.message and t.topic == topic))]


def header_lines(transcript: Transcript) -> list[str]:
    s = transcript.started
    lines = [f"Replay of {transcript.path}: run {s.run_id} ({s.protocol}), started {s.ts}",
             f"scenario {s.scenario_path} sha256 {s.scenario_sha256[:12]}",
             "models: " + ", ".join(f"{name}={spec}" for name, spec in s.models.items())]
    if transcript.migrated_from is not None:
        lines.append(f"(written with transcript schema version {transcript.migrated_from}; upgraded on load)")
    return lines


def replay(transcript: Transcript, turns: Sequence[Turn], printer: ConsolePrinter, speed: Optional[float],
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
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _run(args: argparse.Namespace, out: TextIO) -> int:
    transcript = load(args.transcript)
    topics = transcript.topics
    if args.topic is not None and not 1 <= args.topic <= len(topics):
        print(f"error: --topic {args.topic}: this run has topics 1..{len(topics)}", file=sys.stderr)
        return 2
    color = False if args.no_color or os.environ.get("NO_COLOR") else None
    printer = ConsolePrinter(topics, out, color, speakers=list(speaker_index(transcript)))
    for line in header_lines(transcript):
        printer.write(printer.paint(line, "2"))
    topic = None if args.topic is None else args.topic - 1
    replay(transcript, select(turns_of(transcript.events), topic, args.from_turn), printer,
           None if args.no_delay else args.speed)
    printer.write("")
    for line in summary_lines(transcript.events, topics):
        printer.write(line)
    if transcript.finished is None:
        printer.write("Stop: the run did not finish (the transcript ends here; it can be resumed)")
    if transcript.torn_tail:
        printer.write("(the last line was cut off mid-write and was skipped)")
    return 0
