"""Terminal output of a run, live or replayed: one block per turn, topic and round headers,
verdicts and scores."""

from __future__ import annotations

import sys
from typing import Sequence, TextIO

from moot.events import Error, EventBase, Message, Outcome, RunResumed, Score, TopicClosed, Verdict
from moot.safe_text import terminal_safe
from moot.summary import score_line

PALETTE = ("36", "33", "32", "35", "34", "31", "96", "93")


class ConsolePrinter:
    """Prints events as they are recorded; colours only when writing to a terminal."""

    def __init__(self, topics: Sequence[str], stream: TextIO | None = None, color: bool | None = None,
                 speakers: Sequence[str] = ()):
        stream = stream or sys.stdout  # looked up now: sys.stdout may be replaced after import
        self.topics, self.stream = topics, stream
        self.color = stream.isatty() if color is None else color
        self._topic: object = "unset"
        self._round: object = None
        # Colours follow the scenario's speaker order when known, so a replay from any turn matches.
        self._colors: dict[str, str] = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(speakers)}

    def __call__(self, events: list[EventBase]) -> None:
        for event in events:
            self.show(event)
        self.stream.flush()

    def paint(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def show(self, event: EventBase) -> None:
        if isinstance(event, Message):
            if self.topics:
                self._header(event.topic)
                self._round_header(event.topic, event.round)
            color = self._colors.setdefault(event.speaker, PALETTE[len(self._colors) % len(PALETTE)])
            name = self.paint(f"{event.speaker}", "1;" + color)
            decision = f" → {event.decision}" if event.decision and not self.topics else ""
            self.write(f"\n[{self._where(event)}] {name} ({event.action}, {event.latency_s:.1f}s){decision}:\n"
                       f"{terminal_safe(event.content.strip())}")
        elif isinstance(event, Outcome):
            why = f" — {terminal_safe(event.explanation)}" if event.explanation else ""
            self.write(self.paint(f"  ⇒ {event.prediction}{why}", "1"))
        elif isinstance(event, Verdict):
            extra = f" — {terminal_safe(event.reason)}" if event.reason else ""
            if event.verdict == "UNPARSED":
                extra = f" — could not parse: {event.error}"
            self.write(self.paint(f"  ⇒ verdict: {event.verdict}{extra}", "1"))
        elif isinstance(event, Score):
            self.write(self.paint("  ⇒ " + score_line(event), "1"))
        elif isinstance(event, TopicClosed):
            self.write(f"  ⇒ topic {event.topic + 1} closed by {event.closed_by} after {event.rounds} round(s)")
        elif isinstance(event, Error):
            self.write(self.paint(f"  ✗ error ({event.speaker or 'run'}): {terminal_safe(event.cause)}", "31"))
        elif isinstance(event, RunResumed):
            self.write(self.paint(f"\n  ↻ run resumed: {event.turns_kept} earlier turn(s) kept", "2"))

    def _where(self, event: Message) -> str:
        if not self.topics:  # an item's stage (round)
            return f"{event.action} R{event.round}" if event.round != 1 else event.action
        return f"T{event.topic + 1} R{event.round}" if event.topic is not None else "closing"

    def _header(self, topic: int | None) -> None:
        if topic == self._topic:
            return
        self._topic = topic
        title = f"Topic {topic + 1}/{len(self.topics)}: {self.topics[topic]}" if topic is not None else "Closing"
        self.write("\n" + self.paint(f"=== {title} ===", "1;4"))

    def _round_header(self, topic: int | None, round_: int) -> None:
        if topic is None or (topic, round_) == self._round:
            return
        self._round = (topic, round_)
        self.write("\n" + self.paint(f"--- round {round_} ---", "2"))

    def write(self, text: str) -> None:
        print(text, file=self.stream)
