"""People's ratings of a run's units (`moot annotate RUN`), kept beside the run in
`annotations.jsonl`, never inside a transcript: the transcripts stay the models' record.

One line per answer: who rated (`rater`), which unit and which of its rateable things (`item`,
moot.contract.rating), the kind of thing and the question (`kind`, `key`), the answer (`value`,
as the rater chose it), when, and how long the rater took over the thing. Each rated thing is
appended in one write, so a rater stopped midway keeps what they rated and goes on from there.
Appending is as the transcripts do it (moot.log.jsonl): a torn last line is set aside first; and
under a lock on the file, so two sessions of one rater never record the same thing twice.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Sequence

from pydantic import BaseModel, ConfigDict, ValidationError

from moot.errors import MootError
from moot.log.jsonl import set_aside_torn_tail
from moot.safety.diskio import read_regular

FILE = "annotations.jsonl"


class AnnotationError(MootError, ValueError):
    """An annotations file that cannot be read; one line naming the file and line."""


class Rating(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rater: str
    unit: str
    item: str
    kind: str
    key: str
    value: str
    ts: str
    seconds: float = 0.0


def annotations_path(folder: Path) -> Path:
    return Path(folder) / FILE


def read_ratings(folder: Path) -> list[Rating]:
    """Every rating of the run in `folder` (none: an empty list); a torn last line (a rater
    stopped mid-write) is left out."""
    path = annotations_path(folder)
    if not path.exists():
        return []
    lines = read_regular(path).split("\n")
    found = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            found.append(Rating.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError) as exc:
            if number == len(lines) and not line.endswith("}"):
                break  # the torn tail of an interrupted write
            first = str(exc).splitlines()[0]
            raise AnnotationError(f"{path}:{number}: not a rating ({first})") from None
    return found


def rated_by(folder: Path, rater: str) -> set[tuple[str, str]]:
    """The (unit, item) pairs `rater` has rated in the run in `folder`."""
    return {(r.unit, r.item) for r in read_ratings(folder) if r.rater == rater}


def append_ratings(folder: Path, ratings: Sequence[Rating]) -> bool:
    """Append one thing's ratings in one durable write; False (nothing written) when their rater
    has rated it already (another session of theirs, meanwhile)."""
    path = annotations_path(folder)
    with open(path, "ab") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes
        set_aside_torn_tail(path, AnnotationError)
        done = rated_by(folder, ratings[0].rater) if ratings else set()
        if any((r.unit, r.item) in done for r in ratings):
            return False
        f.write("".join(r.model_dump_json() + "\n" for r in ratings).encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())
    return True
