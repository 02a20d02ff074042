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
from moot.api.outputs import report_folder
from moot.api.saved import SavedRun, open_runs
from moot.errors import UsageError
from moot.scenario.bundled import find_experiment
from moot.safety.yamlsource import SourceError, read_yaml

if TYPE_CHECKING:
    from moot.experiment.grid import Cell as Cell, GridWatch, Report, Shard  # Cell: what a GridWatch is told of
    from moot.experiment.plan import CellPlan
    from moot.experiment.report import ExperimentReport
    from moot.experiment.schema import Experiment as Experiment
    from moot.report.formats import Grid

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
    stopped: Optional[str] = None  # why the grid stopped early (its cost limit): one line

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
    return ExperimentResult(folder, *run_grid(loaded, folder, options, shard, allow_changed, on_cell, watch))


def plan_experiment(experiment: ExperimentLike, *, out: Optional[PathLike] = None,
                    shard: Optional["Shard"] = None) -> list["CellPlan"]:
    """What the grid would run: each cell's units, those done and the model calls left. No model
    is called and no engine built."""
    from moot.experiment.grid import default_out
    from moot.experiment.plan import plan_cells

    loaded = load_experiment(experiment)
    return plan_cells(loaded, Path(out) if out is not None else default_out(loaded), shard)


def parse_shard(text: str) -> "Shard":
    """Share I of N of the grid's units, from `I/N` (1 <= I <= N) as `--shard` spells it."""
    from moot.experiment.grid import parse_shard as parse

    return parse(text)


def plan_lines(experiment: ExperimentLike, *, out: Optional[PathLike] = None, shard: Optional["Shard"] = None,
               options: Optional[RunOptions] = None) -> list[str]:
    """What `moot run EXPERIMENT --plan` prints: each cell's units done and left, the model calls and
    tokens left and, where every model is priced (`options.prices`, the file's `prices:`), their
    cost (at the batch rate with `options.batch`). No model is called."""
    from moot.experiment.grid import default_out, priced
    from moot.experiment.plan import PlanPrices, lines

    loaded = load_experiment(experiment)
    folder = Path(out) if out is not None else default_out(loaded)
    options = options or RunOptions()
    prices = PlanPrices(priced(loaded, options).prices, batch=bool(options.batch))
    return lines(plan_experiment(loaded, out=folder, shard=shard), folder, shard, prices)


def is_grid(scenario: PathLike, vary: Sequence[str] = (), repeats: Optional[int] = None) -> bool:
    """Whether running the scenario (a file or a bundled scenario's name) with `vary` (`KEY=V1,V2`
    items) and `repeats` is an experiment (`moot run SCENARIO --vary ... --repeat N`): with repeats,
    for a protocol that runs items, or with a key its protocol's batch of variants does not know
    (a dotted scenario path)."""
    from moot.api.running import find_scenario_file
    from moot.experiment.shorthand import wanted

    return wanted(find_scenario_file(scenario), vary, repeats)


def grid_of(scenario: PathLike, *, dataset: Optional[PathLike] = None, vary: Sequence[str] = (),
            repeats: Optional[int] = None, limit: Optional[int] = None,
            out: Optional[PathLike] = None) -> tuple["Experiment", Path]:
    """The experiment a scenario with `vary` and `repeats` stands for (see is_grid), checked as a
    file is, and its folder (default transcripts/SCENARIO[-DATASET]-grid[-KEYS]); nothing written."""
    from moot.api.bundled import find_dataset
    from moot.api.running import find_scenario_file
    from moot.experiment.shorthand import experiment

    data = find_dataset(dataset) if dataset is not None else None
    return experiment(find_scenario_file(scenario), data, vary, repeats, limit, Path(out) if out is not None else None)


def experiment_report(folders: Union[PathLike, Sequence[PathLike]], out: Optional[PathLike] = None) -> "ExperimentReport":
    """The report folder of one or more experiment folders (default reports/report-TIME): its tables
    (Markdown, CSV, LaTeX) with their statistics named, the papers' published figures beside, plots;
    `.main` is the tables."""
    from moot.experiment.folders import experiment_folders
    from moot.experiment.report import build

    return build(experiment_folders(_paths(folders)), Path(out) if out is not None else report_folder())


def holds_experiment(folders: Union[PathLike, Sequence[PathLike]]) -> bool:
    """Whether the folders are (or hold) an experiment's: `moot report` reports them as one."""
    from moot.experiment.folders import experiment_folders, is_experiment

    return any(is_experiment(f) for f in experiment_folders(_paths(folders)))


def _paths(folders: Union[PathLike, Sequence[PathLike]]) -> list[Path]:
    return [Path(folders)] if isinstance(folders, (str, os.PathLike)) else [Path(f) for f in folders]


@dataclass(frozen=True)
class Comparison:
    """Two runs of labelled items paired on their items: A against B (the reference), as a table."""

    table: "Grid"  # each run's metric with its interval, Δ = A − B, the paired test
    paired: int  # units paired
    dropped: int  # units of either run without their pair
    only_a: Sequence[str]  # ids of A's items that B lacks
    only_b: Sequence[str]  # and of B's that A lacks

    @property
    def markdown(self) -> str:
        """The table as Markdown (what `moot compare` prints)."""
        from moot.report.formats import markdown

        return markdown(self.table)

    def write(self, out: PathLike) -> Path:
        """The table as compare.md, compare.csv and compare.tex in the folder `out`."""
        from moot.report.formats import latex, to_csv
        from moot.safety.diskio import write_atomic

        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / "compare.md", self.markdown + "\n")
        write_atomic(folder / "compare.csv", to_csv(self.table))
        write_atomic(folder / "compare.tex", latex(self.table))
        return folder


def compare_runs(a: PathLike, b: PathLike, metric: Optional[str] = None) -> Comparison:
    """A against B on the items both ran (same ids; with seeds, the same seeds): each run's `metric`
    (default: A's headline) with its bootstrap interval, Δ = A − B with a paired bootstrap interval,
    the paired test, the minimum detectable Δ. Runs over different datasets (their run.json
    fingerprints differ), with other labels or sharing no item are refused (UsageError)."""
    from moot.experiment.analysis import Column, analyse
    from moot.experiment.report import cell_of_run
    from moot.experiment.tables import arms_grid

    found_a, found_b = cell_of_run(Path(a), "A"), cell_of_run(Path(b), "B")
    first, second = found_a.cell, dataclasses.replace(found_b.cell, seed=found_a.cell.seed)  # single runs pair by item
    if found_a.dataset_sha256 and found_b.dataset_sha256 and found_a.dataset_sha256 != found_b.dataset_sha256:
        alike = " that share a name but not their content" if first.dataset == second.dataset else ""
        raise UsageError(f"moot compare: {a} and {b} ran on different datasets{alike} ({first.dataset}, "
                         f"sha256 {found_a.dataset_sha256[:12]} / {second.dataset}, "
                         f"sha256 {found_b.dataset_sha256[:12]}): an id in both need not be the same item; "
                         "compare runs over one dataset")
    if first.labels != second.labels:
        raise UsageError(f"moot compare: {a} and {b} have different labels "
                         f"({', '.join(first.labels)} / {', '.join(second.labels)})")
    if not set(first.gold) & set(second.gold):
        raise UsageError(f"moot compare: {a} and {b} share no item (compare runs over the same items)")
    analysis = analyse([first, second], Column(first.dataset, metric or found_a.metric), first.model, ["A", "B"], "B")
    table = arms_grid(analysis, {"A": f"A: {a}", "B": f"B: {b}"}, {"A": first.model, "B": second.model})
    found = analysis.comparison("A")
    return Comparison(table, found.paired if found is not None else 0, found.dropped if found is not None else 0,
                      sorted(set(first.gold) - set(second.gold)), sorted(set(second.gold) - set(first.gold)))


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
