"""A RUN argument of replay, export, score and report: a run folder or one transcript file.

A folder's units are its results rows, each naming its transcript (`transcript_of` also finds
those of folders written by earlier moot versions, under `transcripts/`), then every transcript
without a row (a unit that failed or was cut short), by file name. A transcript file is one unit.
Nothing is loaded until asked for: a folder of 10,000 items opens without reading them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

from moot.saved.files import RunFolderError, read_meta, read_results, transcript_of
from moot.saved.records import ResultRow, RunMeta
from moot.errors import MootError, nearest
from moot.log.annotations import FILE as ANNOTATIONS
from moot.log.events import RunStarted
from moot.log.transcript import Reading, Transcript, load

# Not units: an older moot's unfinished transcript the runner set aside; a rescored copy (`score`).
SET_ASIDE = re.compile(r"\.(v\d+|rescored)\.jsonl$")
NOT_TRANSCRIPTS = {"results.jsonl", ANNOTATIONS}  # people's ratings are kept beside the transcripts


@dataclass(frozen=True)
class UnitRef:
    """One unit of a run: its id, its transcript file and its results row (None: unfinished)."""

    id: str
    path: Path
    row: Optional[dict[str, Any]] = None  # as written (a protocol's own keys too)

    @cached_property
    def result(self) -> Optional[ResultRow]:
        """Its results row, typed (checked when read: moot.saved.files)."""
        return None if self.row is None else ResultRow.model_validate(self.row)

    def load(self) -> Transcript:
        return load(self.path)


@dataclass
class RunSource:
    path: Path
    is_folder: bool
    meta: dict[str, Any] = field(default_factory=dict)
    units: list[UnitRef] = field(default_factory=list)

    @cached_property
    def record(self) -> RunMeta:
        """Its run.json, typed (checked when read: moot.saved.files; a transcript file has none)."""
        return RunMeta.model_validate(self.meta)

    def unit(self, unit_id: str) -> UnitRef:
        """The unit called `unit_id`; an unknown id is an error naming the nearest one."""
        for unit in self.units:
            if unit.id == unit_id:
                return unit
        ids = [u.id for u in self.units]
        raise RunFolderError(f"{self.path}: no unit {unit_id!r}{nearest(unit_id, ids)} "
                             f"(units: {', '.join(ids[:8])}{' ...' if len(ids) > 8 else ''})")

    @property
    def name(self) -> str:
        return self.path.name if self.is_folder else self.path.stem


def open_run(path: str | Path) -> RunSource:
    """A run folder or a transcript file as a RunSource (see the module docstring)."""
    path = Path(path)
    if path.is_file():
        return RunSource(path, False, units=[UnitRef(_unit_id(path), path)])
    if not path.is_dir():
        raise RunFolderError(f"{path}: no such run folder or transcript file")
    meta = read_meta(path) or {}
    rows = read_results(path)
    units = [UnitRef(uid, transcript_of(path, ResultRow.model_validate(row)), row) for uid, row in rows.items()]
    listed = {os.path.abspath(u.path) for u in units}  # the same file by name: no link to resolve
    resolved: set[Path] = set()
    for file in transcripts_in(path):
        if os.path.abspath(file) in listed:
            continue
        resolved = resolved or {u.path.resolve() for u in units}  # a row naming it by another way
        if file.resolve() not in resolved:
            units.append(UnitRef(_unit_id(file), file))
    if not units and not meta:
        raise RunFolderError(f"{path}: not a run folder (no run.json, results.jsonl or transcripts)")
    return RunSource(path, True, meta, units)


def transcripts_in(folder: Path) -> list[Path]:
    """Transcript files of a folder (and of its `transcripts/`, as earlier moot versions wrote them)."""
    found = []
    for where in (folder, folder / "transcripts"):
        if where.is_dir():
            found += sorted(p for p in where.glob("*.jsonl")  # a FIFO or a socket is no transcript
                            if p.name not in NOT_TRANSCRIPTS and not SET_ASIDE.search(p.name) and p.is_file())
    return found


def _unit_id(path: Path) -> str:
    """The unit a transcript records (its first event, read alone), else its file name."""
    try:
        _, first = next(iter(Reading(path)))
    except (MootError, StopIteration):
        return path.stem
    return str(first.unit or path.stem) if isinstance(first, RunStarted) else path.stem
