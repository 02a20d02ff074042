"""Running an experiment: one run folder per cell, inside one experiment folder with its manifest.

    OUT/experiment.json                     the manifest: the file, each arm's scenario content hash,
                                            each dataset's fingerprint, every cell and its folder
    OUT/cache.sqlite                        one reply cache: a call two cells share is made once
    OUT/ARM/DATASET/MODEL/seed-S/           a normal run folder (run.json, results.jsonl, transcripts)

A cell is arm x dataset x model x repeat; repeat r runs with the scenario's generation.seed + r
(or the file's r-th of `seeds`).
Every cell runs through moot's Python API (`moot.api.running.prepare(...).run()`), so a cell is a
run like any other: resumable, cached, concurrent. Running the experiment again continues it; cells
added to the file (arms, datasets, models, repeats) run, finished ones are not redone; an arm or a
dataset whose content changed since its cells ran is refused before anything is written, unless
`allow_changed`.

`shard=(i, n)`: this process runs only the units whose hash (of the cell and the unit id) falls in
share i of n, into OUT/shard-I-of-N/...; `moot report` over the shard folders reads their cells as
one experiment (moot.experiment.report), so it gives the figures of a one-machine run.

A cost limit (`--max-cost`, the file's `max_cost:`) holds for all the cells of the folder together:
one budget (moot.models.budget) starts from what their run.json files (and their re-scored copies')
say they spent, every cell's calls and its `score:` re-scoring's count against it, and the grid
stops at the first call it refuses (the cell or its re-scoring stops there resumably); run again
with a higher limit, it continues. Each shard's folder has a limit of its own.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Optional, Protocol

from moot.contract.vary import set_path
from moot.data.load import dataset_fingerprint
from moot.engine.plan import Plan
from moot.models.budget import Budget, BudgetExceeded
from moot.saved.files import read_record
from moot.saved.records import RunMeta
from moot.errors import MootError, UsageError
from moot.experiment.folders import MANIFEST, read_manifest, safe, same_file
from moot.experiment.schema import Arm, Dataset, Experiment
from moot.safety.diskio import write_atomic
from moot.scenario.load import scenario_content_hash, scenario_hash

if TYPE_CHECKING:
    from moot.api.running import Watch

MANIFEST_VERSION = 1
Shard = tuple[int, int]  # (i, n), 1 <= i <= n


class ExperimentChanged(MootError, ValueError):
    """An arm or a dataset changed since its cells ran (one line; nothing written)."""


@dataclass(frozen=True)
class Cell:
    """One cell of the grid (module docstring); `model` None: the arm's own models."""

    arm: Arm
    dataset: Optional[Dataset]
    model: Optional[str]
    repeat: int
    seed: int

    @property
    def dataset_name(self) -> str:
        return self.dataset.name if self.dataset else "-"

    @property
    def model_name(self) -> str:
        return self.model or "default"

    def folder(self, out: Path) -> Path:
        dataset = safe(self.dataset.name) if self.dataset else "scenario"
        return out / safe(self.arm.name) / dataset / safe(self.model_name) / f"seed-{self.seed}"

    def scored_folder(self, out: Path, roles: Mapping[str, str]) -> Path:
        """Where the cell's copy re-scored by these roles goes (the experiment's `score:`), beside
        its folder and named by them: other roles or models make another copy."""
        folder = self.folder(out)
        named = "-".join(f"{role}-{spec}" for role, spec in self.score_roles(roles).items())
        return folder.with_name(f"{folder.name}-scored-{safe(named)}")

    def score_roles(self, roles: Mapping[str, str]) -> dict[str, str]:
        """The experiment's re-scoring roles on this cell: on the cell's model when the grid has a
        models axis (every role of an arm on each model), else on the model the file names."""
        return {role: self.model or spec for role, spec in roles.items()}

    @property
    def key(self) -> str:
        return f"{self.arm.name}/{self.dataset_name}/{self.model_name}/seed-{self.seed}"

    def scenario(self) -> Any:
        """The arm's scenario with this cell's seed (validated again)."""
        data = set_path(self.arm.scenario.model_dump(exclude_unset=True), "generation.seed", self.seed)
        return type(self.arm.scenario).model_validate(data)


def base_seed(arm: Arm) -> int:
    seed = arm.scenario.generation.seed
    return seed if seed is not None else 0


def cells(experiment: Experiment) -> list[Cell]:
    """Every cell, in a fixed order: arms, datasets, models, repeats as the file lists them."""
    spec = experiment.spec
    models: list[Optional[str]] = list(spec.models) or [None]
    found = []
    for arm in experiment.arms:
        datasets: list[Optional[Dataset]] = list(experiment.datasets) if arm.protocol.units.items else [None]
        for dataset in datasets:
            for model in models:
                seeds = spec.seeds or [base_seed(arm) + r for r in range(spec.repeats)]
                found += [Cell(arm, dataset, model, repeat, seed) for repeat, seed in enumerate(seeds)]
    return found


def shard_folder(out: Path, shard: Optional[Shard]) -> Path:
    return out / f"shard-{shard[0]}-of-{shard[1]}" if shard else out


def in_shard(cell: Cell, unit_id: str, shard: Optional[Shard]) -> bool:
    """Whether this shard runs the unit: a stable hash of the cell and unit, modulo n."""
    if shard is None:
        return True
    digest = hashlib.sha256(f"{cell.key}\0{unit_id}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shard[1] == shard[0] - 1


def sharded(plan: Plan, cell: Cell, shard: Optional[Shard]) -> Plan:
    """The plan's units in this shard (all of them without a shard)."""
    if shard is None:
        return plan
    total = sum(1 for unit in plan.units() if in_shard(cell, unit.id, shard))

    def units() -> Iterator[Any]:
        return (unit for unit in plan.units() if in_shard(cell, unit.id, shard))
    return dataclasses.replace(plan, units=units, total=total)


def parse_shard(text: str) -> Shard:
    """`I/N` with 1 <= I <= N."""
    head, sep, tail = text.partition("/")
    try:
        i, n = int(head), int(tail)
    except ValueError:
        i = n = 0
    if not sep or not 1 <= i <= n:
        raise UsageError(f"--shard {text!r}: expected I/N with 1 <= I <= N (e.g. 2/4)")
    return i, n


# --- the manifest -----------------------------------------------------------------------------

def fingerprints(experiment: Experiment) -> dict[str, Any]:
    """What the cells depend on: each arm's scenario content and each dataset's data."""
    return {
        "arms": {a.name: {"scenario": str(a.path), "content_sha256": scenario_content_hash(a.scenario),
                          "sha256": scenario_hash(a.path), "overrides": {k: v for k, v in a.overrides}}
                 for a in experiment.arms},
        "datasets": {d.name: {"spec": str(d.path), "sha256": dataset_fingerprint(d.spec),
                              "benchmark": d.spec.benchmark or d.name} for d in experiment.datasets},
    }


def check_unchanged(experiment: Experiment, before: Optional[dict[str, Any]], out: Path) -> None:
    """Refuse arms or datasets whose content differs from the manifest's (their cells ran on other)."""
    if before is None:
        return
    now = fingerprints(experiment)
    for kind, key in (("arms", "content_sha256"), ("datasets", "sha256")):
        for name, found in now[kind].items():
            old = before.get(kind, {}).get(name)
            if old is not None and old.get(key) != found[key] and not same_file(kind, old, found):
                what = "arm" if kind == "arms" else "dataset"
                raise ExperimentChanged(
                    f"{out / MANIFEST}: {what} {name!r} changed since its cells ran ({kind}.{name}); "
                    "rename it to run it as a new one, or pass --allow-changed to run its cells again on the new "
                    "content in their folders")


def write_manifest(experiment: Experiment, out: Path, status: dict[str, str], shard: Optional[Shard],
                   scored: Optional[Mapping[str, str]] = None, given: Optional[Mapping[str, Any]] = None) -> None:
    """OUT/experiment.json (atomically): the file, fingerprints, every cell with its folder and status
    (and, with `score:`, its re-scored copy and how that ended); `given`: the run's cost limit and
    --batch (`max_cost`, `batch`), which moot report's rerun commands repeat (moot.experiment.shards)."""
    scored = scored or {}
    body = {"manifest_version": MANIFEST_VERSION, "experiment": experiment.name, "title": experiment.spec.title,
            "file": str(experiment.path), "file_sha256": scenario_hash(experiment.path),
            "repeats": len(experiment.spec.seeds) or experiment.spec.repeats, "limit": experiment.spec.limit,
            "shard": list(shard) if shard else None, **fingerprints(experiment), **(given or {}),
            "order": experiment.order, "derived": dict(experiment.derived),
            "labels": {a.name: a.label or a.name for a in experiment.spec.arms},
            "compare": experiment.spec.compare.model_dump() if experiment.spec.compare else None,
            "published": [t.model_dump() for t in experiment.spec.tables], "score": dict(experiment.spec.score),
            "cells": [{"arm": c.arm.name, "dataset": c.dataset_name, "model": c.model_name, "seed": c.seed,
                       "repeat": c.repeat, "folder": str(c.folder(out).relative_to(out)),
                       "status": status.get(c.key, "planned"),
                       **({"scored_folder": str(c.scored_folder(out, experiment.spec.score).relative_to(out)),
                           "scored": scored.get(c.key, "planned")} if experiment.spec.score else {})}
                      for c in cells(experiment)]}
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / MANIFEST, json.dumps(body, indent=2, ensure_ascii=False) + "\n")


# --- running ----------------------------------------------------------------------------------

Report = Callable[[Cell, str], None]  # (cell, a line about it)


class GridWatch(Protocol):
    """What follows the cells as they run (the command line's status line over the grid)."""

    def planned(self, cells: int, units: int) -> None:
        """Before the first cell: how many cells and units (of this shard) the grid holds."""

    def cell(self, cell: Cell) -> "Watch":
        """The watch of the cell about to run (moot.api.running.Watch)."""


def default_out(experiment: Experiment) -> Path:
    return Path("transcripts") / experiment.name


def run_experiment(experiment: Experiment, out: Optional[Path] = None, options: Any = None,
                   shard: Optional[Shard] = None, allow_changed: bool = False,
                   on_cell: Optional[Report] = None,
                   watch: Optional[GridWatch] = None) -> tuple[dict[str, str], Optional[str]]:
    """Run (or continue) every cell; returns each cell's status by its key, and why the grid
    stopped early if it did (its cost limit, module docstring of moot.models.budget: one budget for
    all the cells of this folder). `options`: the API's RunOptions (its cache is replaced by the
    experiment's shared cache unless it is off; its prices and cost limit beat the file's);
    `watch` follows the cells' units live."""
    from moot.api.options import RunOptions
    from moot.api.running import check_priced, prepare

    root = out or default_out(experiment)
    folder = shard_folder(root, shard)
    before = read_manifest(folder)
    if not allow_changed:
        check_unchanged(experiment, before, folder)
    base = priced(experiment, options or RunOptions())
    shared = dataclasses.replace(base, cache=folder / "cache.sqlite") if base.cache is not False else base
    budget = Budget(base.max_cost, spent(experiment, folder))
    given = {"max_cost": base.max_cost, "batch": base.batch is True}
    if base.batch is True:  # one journal, and one wave for every cell's calls
        from moot.models.batch import Batcher

        shared = dataclasses.replace(shared, batch=Batcher(folder))
    prepared = []
    for cell in cells(experiment):  # everything is checked before the first cell runs
        found = prepare(cell.scenario(), source=cell.arm.path, dataset=cell.dataset.path if cell.dataset else None,
                        limit=experiment.spec.limit, models=cell.model, out=cell.folder(folder), options=shared,
                        identity={**cell.arm.identity, "experiment": experiment.name, "arm": cell.arm.name,
                                  "seed": cell.seed})
        prepared.append((cell, dataclasses.replace(found, plan=sharded(found.plan, cell, shard), budget=budget)))
        if experiment.spec.score:  # its re-scoring's calls count against the limit too
            check_priced(cell.score_roles(experiment.spec.score).values(), found.backends, base)
    keys = {f"{c['arm']}/{c['dataset']}/{c['model']}/seed-{c['seed']}": c for c in (before or {}).get("cells", [])}
    status = {cell.key: keys.get(cell.key, {}).get("status", "planned") for cell, _ in prepared}
    scored = {cell.key: keys.get(cell.key, {}).get("scored", "planned")  # by the roles it names, else to do
              if keys.get(cell.key, {}).get("scored_folder") == str(cell.scored_folder(folder, experiment.spec.score)
                                                                   .relative_to(folder)) else "planned"
              for cell, _ in prepared}
    if experiment.text is not None:  # made on the command line: its file, beside its cells
        experiment.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(experiment.path, experiment.text)
    write_manifest(experiment, folder, status, shard, scored, given)
    if watch is not None:
        watch.planned(sum(1 for _, run in prepared if run.planned), sum(run.planned for _, run in prepared))
    together = run_together(prepared, watch, shared.batch) if shared.batch else {}
    for cell, run in prepared:
        if run.planned == 0:
            status[cell.key] = "completed"
        else:
            result = together.get(cell.key) or run.run(watch.cell(cell) if watch is not None else None)
            status[cell.key] = result.status
            write_manifest(experiment, folder, status, shard, scored, given)
            if on_cell is not None:
                on_cell(cell, f"{cell.key}: {result.status} ({result.done}/{result.planned} {run.protocol.units.noun})")
            if result.status == "interrupted" or budget.refused:
                break
        if experiment.spec.score and status[cell.key] == "completed" and scored[cell.key] != "completed":
            scored[cell.key] = score_cell(cell, folder, experiment.spec.score, shared, budget)
            write_manifest(experiment, folder, status, shard, scored, given)
            if on_cell is not None:
                on_cell(cell, f"{cell.key}: re-scored ({', '.join(f'{r}={m}' for r, m in cell.score_roles(experiment.spec.score).items())})"
                              f": {scored[cell.key]}")
            if budget.refused:
                break
    write_manifest(experiment, folder, status, shard, scored, given)
    return status, over_budget(budget) if budget.refused else None


def priced(experiment: Experiment, options: Any) -> Any:
    """The run options with the file's prices (every model's) and cost limit where the command
    line gives none."""
    from moot.models.prices import Prices

    given = options.prices or Prices()
    prices = given if given.every is not None or given.by_spec or experiment.spec.prices is None \
        else Prices(every=experiment.spec.prices)
    limit = options.max_cost if options.max_cost is not None else experiment.spec.max_cost
    return dataclasses.replace(options, prices=prices, max_cost=limit)


def spent(experiment: Experiment, folder: Path) -> float:
    """What the cells in `folder` spent in all, their re-scoring too (each run.json's spend_usd)."""
    score = experiment.spec.score
    folders = [f for cell in cells(experiment)
               for f in (cell.folder(folder), *([cell.scored_folder(folder, score)] if score else []))]
    return sum(((read_record(f) or RunMeta()).spent for f in folders), 0.0)


def over_budget(budget: Budget) -> str:
    """The line an experiment stopped by its cost limit ends with."""
    return (f"stopped before the cost limit of ${budget.limit:g}: ${budget.spent:.4f} spent by the experiment's cells; "
            f"{BudgetExceeded.continues}; finished work is kept")


def run_together(prepared: list[tuple[Cell, Any]], watch: Optional[GridWatch], batcher: Any) -> dict[str, Any]:
    """With --batch every cell runs at once in one event loop, so a wave holds the calls of every
    cell's units (a turn is one batch for the whole grid); each cell's RunResult by its key."""
    import asyncio

    from moot.api.running import blocking

    running = [(cell, run) for cell, run in prepared if run.planned]

    async def all_cells() -> dict[str, Any]:
        try:
            results = await asyncio.gather(*(run.run_async(watch.cell(cell) if watch is not None else None)
                                             for cell, run in running))
        finally:
            await batcher.close()
        return {cell.key: result for (cell, _), result in zip(running, results)}

    return blocking(all_cells)


def score_cell(cell: Cell, out: Path, roles: Mapping[str, str], options: Any, budget: Budget) -> str:
    """The experiment's `score:` on a finished cell (moot score, into its scored folder, answered
    from the experiment's cache when it was done before, within the experiment's cost limit);
    "completed" or "failed"."""
    from moot.api.outputs import rescore

    done = rescore(cell.folder(out), cell.score_roles(roles), out=cell.scored_folder(out, roles), options=options,
                   budget=budget)
    return "failed" if done.failed else "completed"
