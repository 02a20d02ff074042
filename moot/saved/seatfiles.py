"""A run's seats as files in its folder: the hook through which a person answers from outside the
run's process (a browser page of `moot view`, or any other program).

    RUN/seats/SEAT.json         what the seat is asked now: written by the run while it waits, gone
                                when it does not (its `id` changes with every question put)
    RUN/seats/SEAT.answer.json  an answer, {"text": ..., "asked": ID}: written atomically (elsewhere,
                                then renamed) by whoever answers; read and removed by the run
    RUN/seats/SEAT.token        the seat's token (`moot run --human-from browser`): owner-only, made
                                once and kept, so a seat's link outlives a stopped and resumed run

SEAT is the seat's name as a file name (`seat_slug`). An answer naming the question it answers
(`asked`, the pending file's `id`) is taken for that question only: one left from a question an
earlier process put is dropped, never read as the answer to another. An answer without `asked`
answers whatever is asked.
"""

from __future__ import annotations

import hmac
import json
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from moot.safety.diskio import read_regular, write_atomic

SEATS = "seats"
TOKEN = re.compile(r"[A-Za-z0-9_-]{20,64}")  # what a seat token looks like (secrets.token_urlsafe(24))


def seat_slug(name: str) -> str:
    """A seat's name as its files in the run folder are named."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "seat"


def pending_file(run: Path, seat: str) -> Path:
    return Path(run) / SEATS / f"{seat_slug(seat)}.json"


def answer_file(run: Path, seat: str) -> Path:
    return Path(run) / SEATS / f"{seat_slug(seat)}.answer.json"


def token_file(run: Path, seat: str) -> Path:
    return Path(run) / SEATS / f"{seat_slug(seat)}.token"


def read_json(path: Path) -> Optional[dict[str, Any]]:
    """A seat file's object; None when it is not there or not (yet) an object."""
    try:
        found = json.loads(read_regular(path))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def read_pending(run: Path, seat: str) -> Optional[dict[str, Any]]:
    """What the seat is asked now (None: it waits for nothing)."""
    return read_json(pending_file(run, seat))


def write_answer(run: Path, seat: str, text: str, asked: str = "") -> None:
    """Answer the seat's question (`asked`: the pending file's id it answers); FileExistsError
    when an answer waits already (two answers to one question: the first is taken)."""
    data = {"text": text, **({"asked": asked} if asked else {})}
    write_atomic(answer_file(run, seat), json.dumps(data, ensure_ascii=False) + "\n", replace=False)


def clear_pending(run: Path) -> None:
    """Forget what a stopped process asked and what was answered to it (a run starting asks
    anew); the tokens stay."""
    folder = Path(run) / SEATS
    for path in folder.glob("*.json") if folder.is_dir() else ():
        path.unlink(missing_ok=True)


def open_seat(run: Path, seat: str) -> str:
    """The seat's token: the one kept in the run folder, else a new one written there."""
    path = token_file(run, seat)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        write_atomic(path, secrets.token_urlsafe(24) + "\n", replace=False)
    except FileExistsError:
        pass
    os.chmod(path, 0o600)
    return path.read_text(encoding="ascii").strip()


def seat_tokens(run: Path) -> dict[str, str]:
    """Each seat with a token in the run folder: seat (as its files are named) -> token."""
    folder = Path(run) / SEATS
    try:
        names = sorted(p for p in folder.iterdir() if p.name.endswith(".token") and not p.name.startswith("."))
    except OSError:
        return {}
    found = {}
    for path in names:
        try:
            token = read_regular(path).strip()
        except (OSError, UnicodeDecodeError):
            continue
        if TOKEN.fullmatch(token):
            found[path.name.removesuffix(".token")] = token
    return found


@dataclass(frozen=True)
class SeatLink:
    """A seat people take in the browser: its name (as its files are named), its token, and
    whether it is asked something now."""

    seat: str
    token: str
    asked: bool


def seat_links(run: Path) -> list[SeatLink]:
    """The seats of a run folder that have a token."""
    return [SeatLink(seat, token, pending_file(run, seat).exists()) for seat, token in seat_tokens(run).items()]


def seat_of_token(run: Path, token: str) -> Optional[str]:
    """The seat of the run whose token this is, if any (compared in constant time)."""
    for seat, known in seat_tokens(run).items():
        if hmac.compare_digest(known.encode(), token.encode()):
            return seat
    return None
