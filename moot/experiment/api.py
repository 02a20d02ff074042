"""Experiments from Python: load an experiment file, plan it, run (or continue) its grid, report it.

An experiment is a grid of cells, each one run folder (moot.experiment.grid) run through the Python
API (moot.api), which is why these functions stand here, above it; `import moot` names them, and they
are what `moot run EXPERIMENT.yaml [--plan]` and `moot report EXPERIMENT_FOLDER` call.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Optional, Sequence, Union

from moot.api.options import PathLike, RunOptions
from moot.api.saved import SavedRun, open_runs
from moot.errors import UsageError
from moot.scenario.bundled import find_experiment
from moot.safety.yamlsource import SourceError, read_yaml

if TYPE_CHECKING:
    from moot.experiment.grid import GridWatch, Report, Shard
    from moot.experiment.plan import CellPlan
    from moot.experiment.report import ExperimentReport
    from moot.experiment.schema import Experiment

ExperimentLike = Union[PathLike, "Experiment"]


def load_experiment(experiment: ExperimentLike, *, limit: Optional[int] = None, repeats: Optional[int] = None,
                    datasets: Optional[Sequence[PathLike]] = None) -> "Experiment":
    """An experiment file (or a bundled experiment's name), checked whole; `limit` and `repeats`
    override the file's (a quick look at fewer items or repeats), `datasets` its datasets (a paper's
    experiment on data at hand)."""
    from moot.experiment.schema import Experiment, load_experiment as load

    given_data = [str(d) for d in datasets] if datasets is not None else None
    loaded = experiment if isinstance(experiment, Experiment) else load(find_experiment(experiment), given_data)
    if repeats and loaded.spec.seeds:
        raise UsageError(f"repeats: {loaded.path} names its seeds (`seeds:`)")
    given = {key: value for key, value in (("limit", limit), ("repeats", repeats)) if value}
    return dataclasses.replace(loaded, spec=loaded.spec.model_copy(update=given)) if given else loaded


@dataclass(frozen=True)
class ExperimentResult:
    """How an experiment's run ended: each cell's status by its key (arm/dataset/model/seed-N)."""

    folder: Path
    status: Mapping[str, str]

    @property
    def completed(self) -> int:
        return sum(1 for s in self.status.values() if s == "completed")

    @property
    def interrupted(self) -> bool:
        """Stopped from outside: running it again continues it."""
        return any(s == "interrupted" for s in self.status.values())

    def open(self) -> list[SavedRun]:
        """Its cells' run folders, opened."""
        return open_runs(self.folder)


def run_experiment(experiment: ExperimentLike, *, out: Optional[PathLike] = None,
                   options: Optional[RunOptions] = None, shard: Optional["Shard"] = None,
                   allow_changed: bool = False, on_cell: Optional["Report"] = None,
                   watch: Optional["GridWatch"] = None) -> ExperimentResult:
    """Run (or continue) every cell of the grid in `out` (default experiments/NAME): cells already
    finished are not run again, new cells of an edited file are; a cell whose arm or dataset
    changed is refused (ExperimentChanged) unless `allow_changed`. `on_cell` gets a line as each
    cell ends; `watch` follows the cells' units as they run (the command line's status line)."""
    from moot.experiment.grid import default_out, run_experiment as run_grid

    loaded = load_experiment(experiment)
    folder = Path(out) if out is not None else default_out(loaded)
    return ExperimentResult(folder, run_grid(loaded, folder, options, shard, allow_changed, on_cell, watch))


def plan_experiment(experiment: ExperimentLike, *, out: Optional[PathLike] = None,
                    shard: Optional["Shard"] = None) -> list["CellPlan"]:
    """What the grid would run: each cell's units, those done and the model calls left. No model
    is called and no engine built."""
    from moot.experiment.grid import default_out
    from moot.experiment.plan import plan_cells

    loaded = load_experiment(experiment)
    return plan_cells(loaded, Path(out) if out is not None else default_out(loaded), shard)


def experiment_report(folders: Union[PathLike, list[PathLike]], out: PathLike) -> "ExperimentReport":
    """The report folder of one or more experiment folders: its tables (Markdown, CSV, LaTeX) with
    their statistics named, the papers' published figures beside, plots; `.main` is the tables."""
    from moot.experiment.folders import experiment_folders
    from moot.experiment.report import build

    given = [folders] if isinstance(folders, (str, os.PathLike)) else list(folders)
    return build(experiment_folders([Path(f) for f in given]), Path(out))


def validate(path: PathLike, datasets: Optional[Sequence[PathLike]] = None) -> list[str]:
    """Every problem of a scenario file, dataset spec or experiment file, one line each naming the
    file, line and key (none: the file is good). An experiment file (`experiment:` at its top) is
    checked whole, as running it checks it (its first problem); `datasets` stand in for its own."""
    from moot.api.checking import file_problems
    from moot.experiment.schema import load_experiment as load

    try:
        data = read_yaml(Path(path)).data
    except SourceError as exc:
        return [str(exc)]
    if not (isinstance(data, dict) and "protocol" not in data and "experiment" in data):
        return file_problems(path, data)
    try:
        load(Path(path), [str(d) for d in datasets] if datasets is not None else None)
    except SourceError as exc:
        return [str(exc)]
    return []
