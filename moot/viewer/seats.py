"""A person's seat in the browser: the page of one seat of a running run (`/seat/TOKEN`), live, and
its answers, through the run folder's seat files (moot.saved.seatfiles).

`moot run --human SEAT --human-from browser` writes each seat's token into the run folder; the
seat's link names only the token, and the viewer finds the run folder under the served folder
that holds it. The page shows the unit the seat is asked in (the one its question names, else the
run's newest), as it is written, and below it the seat's panel: what is asked (the allowed answers
as buttons for a closed choice, 1-10 for a score, a text box for a free turn), that an answer is
being taken, that it is not the person's turn, or that the run is not running.

An answer is posted to the seat's link with the id of the question it answers; it is written as
the seat's answer file, atomically, only while the run holds its folder, waits on that very
question and has no answer waiting: the one file the viewer writes. A seat's link opens only its
seat's page, its live updates and its answers (on a token-protected address too, without the
viewer's token); what the person types is kept exactly as typed and shown escaped, control
sequences stripped, like any recorded text.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Optional

from moot.saved.seatfiles import TOKEN, answer_file, read_pending, seat_of_token, seat_tokens, write_answer
from moot.viewer.catalog import Catalog, stamps
from moot.engine.folder import live_file
from moot.viewer.links import Links
from moot.viewer.pages import Pages

MAX_ANSWER = 100_000  # characters of one answer


@dataclass(frozen=True)
class SeatAt:
    """The seat a token opens: its run folder (and where under the served folder), its name."""

    run: Path
    rel: PurePosixPath
    seat: str
    token: str


class SeatIndex:
    """Which run folder under the served folder a seat token opens (found by walking the run
    folders when a token is not known, at most every RESCAN_S; a token whose file is gone opens
    nothing)."""

    RESCAN_S = 0.2

    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self._known: dict[str, SeatAt] = {}
        self._scanned = float("-inf")
        self._lock = threading.Lock()

    def find(self, token: str) -> Optional[SeatAt]:
        if not TOKEN.fullmatch(token):
            return None
        with self._lock:
            known = self._known.get(token)
            if known is not None and seat_of_token(known.run, token) == known.seat:
                return known
            if time.monotonic() - self._scanned < self.RESCAN_S:
                return None
            self._known = self._scan()
            self._scanned = time.monotonic()
            return self._known.get(token)

    def _scan(self) -> dict[str, SeatAt]:
        found = {}
        for path, is_folder, _ in self.catalog.walk():
            if is_folder:
                for seat, token in seat_tokens(path).items():
                    found[token] = SeatAt(path, self.catalog.root.rel_of(path), seat, token)
        return found


def running(pages: Pages, at: SeatAt) -> bool:
    return pages.catalog.summary(at.run, True).status == "running"


def current_unit(pages: Pages, at: SeatAt, pending: Optional[dict[str, Any]]) -> Optional[str]:
    """The unit the seat's page shows: the one it is asked in, else the run's newest."""
    _, table = pages.table(at.rel)
    asked = str((pending or {}).get("transcript") or "").removesuffix(".jsonl")
    if asked in table.refs:
        return asked
    newest = max(table.refs.items(), key=lambda item: stamps(item[1].path, False), default=None)
    return newest[0] if newest else None


def panel_context(pages: Pages, at: SeatAt) -> dict[str, Any]:
    """The seat's panel: `state` asking | sending | waiting | finished | stopped, and what is asked."""
    pending = read_pending(at.run, at.seat)
    status = pages.catalog.summary(at.run, True).status
    if status != "running":
        state = "finished" if status == "finished" else "stopped"
    elif answer_file(at.run, at.seat).exists():
        state = "sending"
    elif pending is not None and isinstance(pending.get("asked"), dict):
        state = "asking"
    else:
        state = "waiting"
    asked = pending.get("asked", {}) if pending else {}
    scale = asked.get("scale") or [1, 10]
    return dict(seat=at.seat, state=state, pending=pending or {}, asked=asked, kind=asked.get("kind", "text"),
                scores=list(range(int(scale[0]), int(scale[1]) + 1)))


def seat_regions(pages: Pages, links: Links, at: SeatAt) -> dict[str, str]:
    """The seat page's live regions: the unit it is asked in, and its panel."""
    panel = panel_context(pages, at)
    key = current_unit(pages, at, panel["pending"] or None)
    if key is None:
        body = pages.render("_seat_empty.html", links)
    else:
        body = pages.render("_unit_body.html", links, **pages.unit_context(links, at.rel, key))
    return {"unit-body": body,
            "seat-panel": pages.render("_seat_panel.html", links, action=links.seat(at.token) or "", **panel)}


def seat_page(pages: Pages, links: Links, at: SeatAt) -> str:
    return pages.with_regions("seat.html", links, seat_regions(pages, links, at), seat=at.seat,
                              live=links.seat_events(at.token), title=f"Seat {at.seat}")


def seat_stamp(pages: Pages, at: SeatAt) -> tuple[Any, ...]:
    """What changes when the seat's page should: its files, the unit's, whether the run runs."""
    pending = read_pending(at.run, at.seat)
    key = current_unit(pages, at, pending)
    _, table = pages.table(at.rel)
    transcript = table.refs[key].path if key is not None else None
    return (repr(pending), answer_file(at.run, at.seat).exists(), key,
            stamps(transcript, False) if transcript else None, stamps(live_file(transcript), False) if transcript else None,
            running(pages, at))


class NotAsked(ValueError):
    """An answer to a question the seat is not asked (any more)."""


def take_answer(pages: Pages, at: SeatAt, asked: str, text: str) -> None:
    """Write the answer to the question `asked`, if the running run waits on it (else NotAsked)."""
    if len(text) > MAX_ANSWER:
        raise NotAsked(f"an answer is at most {MAX_ANSWER} characters")
    if not running(pages, at):
        raise NotAsked("the run is not running: nothing is asked now")
    pending = read_pending(at.run, at.seat)
    if pending is None or not asked or pending.get("id") != asked:
        raise NotAsked("this question was answered already, or is no longer asked")
    try:
        write_answer(at.run, at.seat, text.replace("\r\n", "\n"), asked)
    except FileExistsError:
        raise NotAsked("an answer to this question is being taken already") from None
