"""`moot run EXPERIMENT.yaml --plan`: what an experiment would spend, before spending it.

Per cell: its units (the dataset's items after --limit, or the runs of the scenario), those
already finished in its folder (no call needed), model calls (the protocol's `calls` hook per
unit, times the units left; `?` for a protocol whose calls depend on the conversation), how many
of them the experiment's reply cache already holds (the calls an interrupted unit recorded, which
its resumption is answered from), and the prompt and completion tokens the finished units of the
same arm used per unit (the recorded usage of up to 20 finished units' calls; `?` before any ran),
with a cost when prices per million tokens are given (`--price`, else the file's `prices:`). No
model is loaded or called, no server is asked, nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from moot.engine.folder import iter_results
from moot.engine.plan import dataset_plan, variant_plan
from moot.experiment.grid import Cell, Shard, cells, in_shard, shard_folder
from moot.experiment.schema import Experiment
from moot.models.cache import held


@dataclass(frozen=True)
class CellPlan:
    cell: Cell
    units: int
    done: int
    calls: Optional[float]  # model calls of the units left (None: the protocol cannot say)
    cached: int = 0  # of those, the calls the reply cache holds (recorded by interrupted units)


@dataclass(frozen=True)
class Usage:
    """Tokens per unit an arm used so far (from its finished units' recorded usage)."""

    prompt: float
    completion: float
    units: int


def _unit_ids(cell: Cell, limit: Optional[int], shard: Optional[Shard]) -> list[str]:
    scenario = cell.arm.scenario
    if cell.dataset is not None:
        plan = dataset_plan(cell.arm.protocol, scenario, cell.dataset.path, limit)
    else:
        plan = variant_plan(cell.arm.protocol, scenario, ())
    return [u.id for u in plan.units() if in_shard(cell, u.id, shard)]


def plan_cells(experiment: Experiment, out: Path, shard: Optional[Shard] = None) -> list[CellPlan]:
    folder = shard_folder(out, shard)
    found = []
    ids_of: dict[tuple[str, str], list[str]] = {}
    for cell in cells(experiment):
        key = (cell.arm.name, cell.dataset_name)
        if key not in ids_of:
            ids_of[key] = _unit_ids(cell, experiment.spec.limit, shard)
        ids = ids_of[key]
        finished = {row["id"] for _, row in iter_results(cell.folder(folder))}
        left = sum(1 for i in ids if i not in finished)
        per_unit = cell.arm.protocol.calls(cell.arm.scenario) if cell.arm.protocol.calls else None
        found.append(CellPlan(cell, len(ids), len(ids) - left, None if per_unit is None else per_unit * left,
                              held(folder / "cache.sqlite", recorded_keys(cell.folder(folder), set(ids) - finished))))
    return found


def recorded_keys(folder: Path, left: set[str]) -> list[str]:
    """The cache keys of the calls the cell's unfinished units recorded before they stopped."""
    from moot.api.saved import open_run

    if not left or not (folder / "run.json").is_file():
        return []
    return [call.key for unit in open_run(folder).units() if unit.row is None and unit.id in left
            for call in unit.transcript().calls if call.key]


SAMPLE = 20  # finished units whose transcripts --plan reads per cell for tokens per unit


def usage(folder: Path) -> Optional[Usage]:
    """Tokens per finished unit of a cell: the recorded usage of its calls (cached replies count as
    the call they answer), from the transcripts of up to SAMPLE finished units."""
    from moot.api.saved import open_run

    if not (folder / "run.json").is_file():
        return None
    prompt = completion = 0.0
    units = 0
    for unit in open_run(folder).units():
        if unit.row is None:
            continue
        for call in unit.transcript().calls:
            prompt += call.usage.prompt_tokens
            completion += call.usage.completion_tokens
        units += 1
        if units == SAMPLE:
            break
    return Usage(prompt / units, completion / units, units) if units else None


def lines(plans: Sequence[CellPlan], out: Path, shard: Optional[Shard] = None,
          prices: Optional[tuple[float, float]] = None) -> list[str]:
    """The plan as a table (Markdown) with its totals."""
    folder = shard_folder(out, shard)
    rows = ["| cell | units | done | calls left | of them cached | prompt tokens left | completion tokens left | cost |",
            "|---|---|---|---|---|---|---|---|"]
    total_calls: Optional[float] = 0.0
    total_tokens: Optional[list[float]] = [0.0, 0.0]
    total_units = total_left = 0
    arm_usage: dict[str, Optional[Usage]] = {}
    for p in plans:
        if p.cell.arm.name not in arm_usage:
            arm_usage[p.cell.arm.name] = next(
                (u for u in (usage(q.cell.folder(folder)) for q in plans if q.cell.arm.name == p.cell.arm.name) if u),
                None)
        used = arm_usage[p.cell.arm.name]
        left = p.units - p.done
        tokens = (used.prompt * left, used.completion * left) if used else None
        cost = f"{(tokens[0] * prices[0] + tokens[1] * prices[1]) / 1e6:.4f}" if tokens and prices else "?"
        rows.append(f"| {p.cell.key} | {p.units} | {p.done} | {'?' if p.calls is None else f'{p.calls:.0f}'} | {p.cached} | "
                    f"{'?' if tokens is None else f'{tokens[0]:.0f}'} | {'?' if tokens is None else f'{tokens[1]:.0f}'}"
                    f" | {cost} |")
        total_units += p.units
        total_left += left
        total_calls = None if total_calls is None or p.calls is None else total_calls + p.calls
        total_tokens = None if total_tokens is None or tokens is None else [total_tokens[0] + tokens[0],
                                                                            total_tokens[1] + tokens[1]]
    calls = "?" if total_calls is None else f"{total_calls:.0f}"
    tokens_text = "?" if total_tokens is None else f"{total_tokens[0]:.0f} prompt + {total_tokens[1]:.0f} completion"
    cost = f", cost {(total_tokens[0] * prices[0] + total_tokens[1] * prices[1]) / 1e6:.4f}" \
        if total_tokens is not None and prices else ""
    cached = sum(p.cached for p in plans)
    return [*rows, "", f"{len(plans)} cells, {total_units} units ({total_units - total_left} done), "
                       f"{calls} model calls ({cached} of them cached) and {tokens_text} tokens left{cost}; "
                       "no model was called."]
