"""An experiment's findings, as `moot report` computes them (moot.experiment.report): the same
tables (the papers' tables beside their published figures, each arm per column with its intervals
over repeats and items and its paired test against the reference, the deliberation dynamics, the
protocols' measures and their trajectories), computed from the cells' results only, in the
background for a large experiment (moot.viewer.deferred), again whenever a cell gains units."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Hashable

from moot.errors import MootError
from moot.report.formats import Grid
from moot.viewer.deferred import Deferred
from moot.viewer.figures import resampling

INLINE_UNITS = 5000  # up to this many units in its runs, an experiment is analysed with the page


@dataclass(frozen=True)
class Findings:
    grids: tuple[Grid, ...] = ()
    problem: str = ""  # why there is no table (what `moot report` would say)
    pending: bool = False
    not_measured: str = ""  # what a paper's table with no row says


def analysed(folder: Path) -> Findings:
    from moot.experiment.report import NOT_MEASURED, load, tables

    try:
        loaded = load([folder])
        found = tables(loaded, resampling(max((len(c.gold) for c in loaded.cells), default=1)))
    except (MootError, OSError, ValueError, KeyError) as exc:
        return Findings(problem=str(exc))
    grids = tuple(t.grid for t in found)
    return Findings(grids, "" if any(g.rows for g in grids) else "no finished cell to analyse yet", False,
                    NOT_MEASURED)


def findings(deferred: Deferred, folder: Path, units: int, key: Hashable) -> Findings:
    """The experiment's findings (pending while a large one is analysed); `key` changes with its cells."""
    ready, found = deferred.value(("experiment", key), units <= INLINE_UNITS, lambda: analysed(folder))
    return found if ready and isinstance(found, Findings) else Findings(pending=True)
