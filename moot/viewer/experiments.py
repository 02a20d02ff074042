"""An experiment's findings on the runs list, as `moot report` computes them (moot.experiment.report):
each arm's metric with its intervals over repeats and items, and each arm against the reference
(Δ with its paired interval, p, Holm, MDE), for every dataset's metrics over all its items, and
each measure of runs of a scenario. Computed from the cells' results only, in the background for a
large experiment (moot.viewer.deferred), again whenever a cell gains units."""

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


def analysed(folder: Path) -> Findings:
    from moot.experiment.measures import measure_grid
    from moot.experiment.report import analyses, load
    from moot.experiment.tables import arms_grid

    try:
        loaded = load([folder])
        found = analyses(loaded, resampling(max((len(c.gold) for c in loaded.cells), default=1)))
    except (MootError, OSError, ValueError, KeyError) as exc:
        return Findings(problem=str(exc))
    grids = [arms_grid(a, loaded.labels) for a in found if a.column.target is None]
    for measure in sorted({m for c in loaded.measured for m in c.values}):
        for model in sorted({c.model for c in loaded.measured}):
            grid = measure_grid(loaded.measured, measure, model, loaded.arms, loaded.reference)
            grids += [grid] if grid is not None else []
    return Findings(tuple(grids), "" if grids else "no finished cell to analyse yet")


def findings(deferred: Deferred, folder: Path, units: int, key: Hashable) -> Findings:
    """The experiment's findings (pending while a large one is analysed); `key` changes with its cells."""
    ready, found = deferred.value(("experiment", key), units <= INLINE_UNITS, lambda: analysed(folder))
    return found if ready and isinstance(found, Findings) else Findings(pending=True)
