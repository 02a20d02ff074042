"""People's ratings of a run's units (`moot annotate RUN`), kept beside the run in
`annotations.jsonl`, never inside a transcript: the transcripts stay the models' record.

One line per answer: who rated (`rater`), which unit and which of its rateable things (`item`,
moot.contract.rating), the kind of thing and the question (`kind`, `key`), the answer (`value`,
as the rater chose it), when, and how long the rater took over the thing. Each rated thing is
appended in one write, so a rater stopped midway keeps what they rated and goes on from there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

from pydantic import BaseModel, ConfigDict, ValidationError

from moot.errors import MootError

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
    lines = path.read_text(encoding="utf-8").split("\n")
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


def append_ratings(folder: Path, ratings: Iterable[Rating]) -> None:
    """Append ratings in one durable write."""
    text = "".join(r.model_dump_json() + "\n" for r in ratings)
    with open(annotations_path(folder), "a", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
