"""Seats a person takes in a run (`RunOptions(seats=..., person=...)`, `--human SEAT` on the command line).

A seat is a `SeatSpec` (a seat the protocol declares for the scenario: an agent, a role or a group,
with a time limit per turn and what stands in when it runs out); the person answering it is anything
with `async ask(asking, question, problem) -> str`: what is `asked` (the seat, the speaker, where,
what the conversation shows), one `Question` of it (free text, a choice, a score) and why the
previous answer did not read. moot gives `ScriptedPerson` (answers in advance), `QueuedPerson`
(`await answer(text)` from elsewhere in the process), `FolderPerson` (answers written into the run
folder's seat files, as `moot view`'s seat pages write them); a person who leaves raises
`PersonLeft` (the run stops at that turn, resumably). `open_seat` gives a seat's browser token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from moot.kit.seats import MAX_TYPED as MAX_TYPED  # the longest answer a seat takes, in bytes
from moot.kit.seats import (
    Asking as Asking, FolderPerson as FolderPerson, Person as Person, PersonLeft as PersonLeft,
    QueuedPerson as QueuedPerson, Question as Question, ScriptedPerson as ScriptedPerson, SeatSpec as SeatSpec,
)
from moot.saved.seatfiles import open_seat as _open_seat


def seat_specs(texts: Iterable[str]) -> tuple[SeatSpec, ...]:
    """Seats as the command line spells them, `SEAT[:SECONDS[:FALLBACK]]` each (bad input: a UsageError)."""
    return tuple(SeatSpec.parse(text) for text in texts)


def open_seat(run: Path, seat: str) -> str:
    """The seat's token for its page on `moot view` (/seat/TOKEN): the one kept in the run folder,
    else a new one written there."""
    return _open_seat(Path(run), seat)
