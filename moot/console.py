"""Terminal output of a run, live or replayed: one block per turn under its section's header
(a conference's topic and round, an item's stage), verdicts, scores, decisions and outcomes.

Every recorded string passes through `terminal_safe` before it is written: what a model (or a
dataset, or a scenario) wrote cannot move the cursor, recolour or retitle the terminal. Colours
are moot's own, added after.
"""

from __future__ import annotations

import sys
from typing import Optional, Sequence, TextIO

from moot.events import Coverage, Error, EventBase, Message, Outcome, RunResumed, Score, TopicClosed, Verdict
from moot.safe_text import terminal_safe
from moot.summary import score_line
from moot.timeline import Key, closed_text, coverage_text, outcome_text, place_of, section_title, verdict_detail

PALETTE = ("36", "33", "32", "35", "34", "31", "96", "93")


class ConsolePrinter:
    """Prints events as they are recorded; colours only when writing to a terminal."""

    def __init__(self, topics: Sequence[str], stream: TextIO | None = None, color: bool | None = None,
                 speakers: Sequence[str] = (), result_name: str = "prediction"):
        stream = stream or sys.stdout  # looked up now: sys.stdout may be replaced after import
        self.topics, self.stream, self.result_name = list(topics), stream, result_name
        self.conference = bool(topics)
        self.color = stream.isatty() if color is None else color
        self._place: Optional[Key] = None
        self._round: object = None
        # Colours follow the recorded speaker order when known, so a replay from any turn matches.
        self._colors: dict[str, str] = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(speakers)}

    def __call__(self, events: list[EventBase]) -> None:
        for event in events:
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
            self.say(f"  ⇒ {outcome_text(event, self.result_name)}", "1")
            if event.explanation:
                self.say(f"    {event.explanation}")
        elif isinstance(event, Verdict):
            self.say(f"  ⇒ verdict: {event.verdict} — {verdict_detail(event)}".rstrip(" —"), "1")
        elif isinstance(event, Score):
            self.say("  ⇒ " + score_line(event), "1")
        elif isinstance(event, TopicClosed):
            self.say(f"  ⇒ topic {event.topic + 1} {closed_text(event)}")
        elif isinstance(event, Coverage):
            self.say(f"  ⇒ {coverage_text(event)}", "1")
        elif isinstance(event, Error):
            self.say(f"  ✗ error ({event.speaker or 'run'}): {event.cause}", "31")
        elif isinstance(event, RunResumed):
            self.write("")
            self.say(f"  ↻ run resumed: {event.turns_kept} earlier turn(s) kept", "2")

    def _message(self, m: Message) -> None:
        place = place_of(m, self.conference)
        if place != self._place:
            self._place = place
            self.write("\n" + self.paint(terminal_safe(f"=== {section_title(place, self.topics)} ==="), "1;4"))
        if place[0] == "topic" and (m.topic, m.round) != self._round:
            self._round = (m.topic, m.round)
            self.write("\n" + self.paint(f"--- round {m.round} ---", "2"))
        color = self._colors.setdefault(m.speaker, PALETTE[len(self._colors) % len(PALETTE)])
        name = self.paint(terminal_safe(m.speaker), "1;" + color)
        if self.conference:
            where = f"T{m.topic + 1} R{m.round}" if m.topic is not None else "closing"
            what = f"{m.action}, {m.latency_s:.1f}s"
        else:  # an item: its stage and round, the decision its reply gave
            where, what = f"{m.action} R{m.round}", f"{m.latency_s:.1f}s"
        decision = f" → {m.decision}" if m.decision and not self.conference else ""
        self.write(f"\n[{terminal_safe(where)}] {name} ({terminal_safe(what)}){terminal_safe(decision)}:\n"
                   f"{terminal_safe(m.content.strip())}")

    def write(self, text: str) -> None:
        print(text, file=self.stream)
