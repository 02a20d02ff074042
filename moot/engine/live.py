"""A turn in progress, seen from another process: the run's live side file.

A transcript records a turn once it is finished. While a unit's turn is being generated, its run
keeps `RUN/UNIT.live.json` (moot.engine.folder.live_file) describing it — who speaks, where, and
the text so far — replaced atomically (a reader sees the old file or the new one, never half of
one), at most every `EVERY_S` seconds as text arrives. The file is removed when the turn is
recorded and when the unit ends, so it exists only while a turn is under way (a killed run may
leave one behind: `moot view` shows it only while the run folder's lock is held). The transcript
itself stays append-only and untouched. Writing it never fails the run: a refused write is dropped.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable, Optional

from moot.kit._context import Listener, OnText, Speaking
from moot.engine.folder import live_file
from moot.log.events import EventBase, Message, RunFinished
from moot.log.transcript import now
from moot.models.streaming import Watcher

LIVE_VERSION = 1
EVERY_S = 0.2  # the text so far is written at most this often


class LiveTurn:
    """The live side file of one unit (see the module docstring)."""

    watch_only = True  # its turns' text goes to a Watcher: no server is asked to stream for it

    def __init__(self, transcript: Path, last_seq: int = 0, clock: Callable[[], float] = time.monotonic):
        self.path = live_file(transcript)
        self.clock = clock
        self.turn: Optional[dict[str, object]] = None
        self.text = ""
        self.last_seq = last_seq  # the latest event recorded: the turn in progress comes after it
        self._written = 0.0
        self._on_disk = True  # a file may be there (one a killed run left behind) until the first close

    def __call__(self, events: list[EventBase]) -> None:
        """Recorded events: a message ends the turn in progress (it is in the transcript now)."""
        if events:
            self.last_seq = events[-1].seq
        if any(isinstance(e, (Message, RunFinished)) for e in events):
            self.close()

    def speaking(self, turn: Speaking) -> OnText:
        self.turn = {"version": LIVE_VERSION, "unit": turn.unit, "speaker": turn.speaker, "label": turn.label,
                     "action": turn.action, "where": turn.where, "part": turn.part, "round": turn.round,
                     "started": now(), "after_seq": self.last_seq}
        self.text = ""
        self._write()
        return Watcher(self._more)

    def _more(self, text: str) -> None:
        self.text += text
        if self.clock() - self._written >= EVERY_S:
            self._write()

    def _write(self) -> None:
        if self.turn is None:
            return
        self._written = self.clock()
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self._on_disk = True
            temporary.write_text(json.dumps({**self.turn, "text": self.text}, ensure_ascii=False), encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError:  # a side file: the run goes on without it
            self.turn = None

    def close(self) -> None:
        """No turn in progress: the file goes (looked for only when one may be there: most turns of
        a batch write none, and two failing unlinks per recorded turn were a visible part of its cost)."""
        self.turn, self.text = None, ""
        if not self._on_disk:
            return
        self._on_disk = False
        for path in (self.path, self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")):
            try:
                path.unlink()
            except OSError:
                pass


class Listeners:
    """Several listeners as one: each sees every event; a turn's text goes to everyone who wants it."""

    def __init__(self, *listeners: Optional[Listener]):
        self.listeners = [listener for listener in listeners if listener is not None]

    @property
    def watch_only(self) -> bool:
        """Whether every turn's text would go to Watchers only (a text sink made before a turn
        starts must then be a Watcher too: moot.protocols.items.document.shown_live)."""
        return all(getattr(listener, "watch_only", False) for listener in self.listeners
                   if getattr(listener, "speaking", None) is not None)

    def __call__(self, events: list[EventBase]) -> None:
        for listener in self.listeners:
            listener(events)

    def speaking(self, turn: Speaking) -> Optional[OnText]:
        sinks = [sink for sink in (listener.speaking(turn) for listener in self.listeners) if sink is not None]
        if len(sinks) <= 1:
            return sinks[0] if sinks else None

        def each(text: str) -> None:
            for sink in sinks:
                sink(text)

        return Watcher(each) if all(isinstance(sink, Watcher) for sink in sinks) else each
