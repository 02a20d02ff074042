"""`moot run EXPERIMENT.yaml --plan`: what an experiment would spend, before spending it.

Per cell: its units (the dataset's items after --limit, or the runs of the scenario), those
already finished in its folder (no call needed), model calls (the protocol's `calls` hook per
unit, times the units left; `?` for a protocol whose calls depend on the conversation), how many
of them the experiment's reply cache already holds (the calls an interrupted unit recorded, which
its resumption is answered from), and the prompt and completion tokens per unit, times the units
left, with a cost when prices per million tokens are given (`--price`, else the file's `prices:`):

- measured: the recorded usage of up to 20 finished units of the same arm;
- before any finished, estimated (marked `~`): a dry run of the arm's scenario on the dataset's
  first items, on moot's scripted model in a temporary folder (in-process; no backend, removed
  after), renders the prompts each call sends; prompt tokens are their characters over
  CHARS_PER_TOKEN (a rule of thumb for English text under BPE tokenizers, not a tokenizer;
  earlier replies inside later prompts are the scripted model's, shorter than a real one's), and
  completion tokens the generation bound: the role's max_tokens per call that generates text,
  1 per closed choice or score (an upper bound). A protocol whose calls depend on the
  conversation (`?` calls) gets no estimate.

No model is loaded or called, no server is asked, nothing is written in the experiment's folder.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from moot.saved.files import iter_results
from moot.engine.plan import item_ids, variant_plan
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
    """Tokens per unit: an arm's finished units' recorded usage, or an estimate (`estimated`)."""

    prompt: float
    completion: float
    units: int
    estimated: bool = False


CHARS_PER_TOKEN = 4.0  # the rule of thumb for English text (module docstring); no tokenizer is loaded
DRY_ITEMS = 3  # the dataset's first items a dry run renders the prompts of


def estimate(cell: Cell) -> Optional[Usage]:
    """Tokens per unit of a cell before any of its arm's units finished (module docstring); None
    when the protocol's calls depend on the conversation, or the dry run could not run."""
    from moot.api.options import RunOptions
    from moot.api.running import prepare
    from moot.api.saved import open_run
    from moot.errors import MootError

    if cell.dataset is None or cell.arm.protocol.calls is None:
        return None
    scenario = cell.scenario()
    with tempfile.TemporaryDirectory(prefix="moot-plan-") as tmp:
        try:
            prepare(scenario, source=cell.arm.path, dataset=cell.dataset.path, limit=DRY_ITEMS, models="scripted",
                    out=Path(tmp) / "dry", options=RunOptions(cache=False)).run()
            units = [u for u in open_run(Path(tmp) / "dry").units() if u.row is not None]
            calls = [call for unit in units for call in unit.transcript().calls]
        except (MootError, ValueError, OSError):
            return None
    if not units:
        return None
    prompt = sum(len(str(m.get("content", ""))) for call in calls for m in call.messages) / CHARS_PER_TOKEN
    completion = sum(1 if call.kind in ("choice", "score") else scenario.generation_for(call.role).max_tokens
                     for call in calls)
    return Usage(prompt / len(units), completion / len(units), len(units), estimated=True)


def _unit_ids(cell: Cell, limit: Optional[int]) -> list[str]:
    scenario = cell.arm.scenario
    if cell.dataset is not None:
        return item_ids(cell.arm.protocol, scenario, cell.dataset.path, limit)[1]
    return [u.id for u in variant_plan(cell.arm.protocol, scenario, ()).units()]


def _ids_key(cell: Cell) -> tuple[str, ...]:
    """What a cell's unit ids depend on: a dataset's items (checked against the scenario's labels,
    so arms of one protocol and label set share them), or the arm's own scenario."""
    if cell.dataset is None:
        return ("scenario", cell.arm.name)
    return (cell.arm.protocol.name, cell.dataset_name, *sorted(cell.arm.scenario.label_set()))


def plan_cells(experiment: Experiment, out: Path, shard: Optional[Shard] = None) -> list[CellPlan]:
    folder = shard_folder(out, shard)
    found = []
    ids_of: dict[tuple[str, ...], list[str]] = {}
    for cell in cells(experiment):
        key = _ids_key(cell)
        if key not in ids_of:
            ids_of[key] = _unit_ids(cell, experiment.spec.limit)
        ids = [i for i in ids_of[key] if in_shard(cell, i, shard)]  # a shard's share is the cell's own
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
    estimates: dict[tuple[str, str], Optional[Usage]] = {}
    for p in plans:
        if p.cell.arm.name not in arm_usage:
            arm_usage[p.cell.arm.name] = next(
                (u for u in (usage(q.cell.folder(folder)) for q in plans if q.cell.arm.name == p.cell.arm.name) if u),
                None)
        used = arm_usage[p.cell.arm.name]
        left = p.units - p.done
        if used is None and left:
            key = (p.cell.arm.name, p.cell.dataset_name)
            used = estimates[key] if key in estimates else estimates.setdefault(key, estimate(p.cell))
        tokens = (used.prompt * left, used.completion * left) if used else None
        mark = "~" if used is not None and used.estimated else ""
        cost = f"{mark}{(tokens[0] * prices[0] + tokens[1] * prices[1]) / 1e6:.4f}" if tokens and prices else "?"
        rows.append(f"| {p.cell.key} | {p.units} | {p.done} | {'?' if p.calls is None else f'{p.calls:.0f}'} | {p.cached} | "
                    f"{'?' if tokens is None else f'{mark}{tokens[0]:.0f}'} | "
                    f"{'?' if tokens is None else f'{mark}{tokens[1]:.0f}'} | {cost} |")
        total_units += p.units
        total_left += left
        total_calls = None if total_calls is None or p.calls is None else total_calls + p.calls
        total_tokens = None if total_tokens is None or tokens is None else [total_tokens[0] + tokens[0],
                                                                            total_tokens[1] + tokens[1]]
    calls = "?" if total_calls is None else f"{total_calls:.0f}"
    tokens_text = "?" if total_tokens is None else f"{total_tokens[0]:.0f} prompt + {total_tokens[1]:.0f} completion"
    estimated = any(u is not None for u in estimates.values())
    cost = f", cost {'~' if estimated else ''}{(total_tokens[0] * prices[0] + total_tokens[1] * prices[1]) / 1e6:.4f}" \
        if total_tokens is not None and prices else ""
    cached = sum(p.cached for p in plans)
    return [*rows, "", f"{len(plans)} cells, {total_units} units ({total_units - total_left} done), "
                       f"{calls} model calls ({cached} of them cached) and {'~' if estimated else ''}{tokens_text} "
                       f"tokens left{cost}; no model was called.",
            *([f"~ estimated before any unit of the arm finished: prompts as a dry run of up to {DRY_ITEMS} items on "
               f"moot's scripted model renders them, at {CHARS_PER_TOKEN:.0f} characters a token (a rule of thumb, "
               "no tokenizer; earlier replies in later prompts are the scripted model's, shorter than a real "
               "model's); completions at the generation bound (max_tokens per text call, 1 per choice or score: "
               "an upper bound). Finished units' recorded usage replaces it."] if estimated else [])]
