"""`moot run EXPERIMENT.yaml --plan`: what an experiment would spend, before spending it.

Per cell: its units (the dataset's items after --limit, or the runs of the scenario), those
already finished in its folder (no call needed), model calls (the protocol's `calls` hook per
unit, times the units left; `?` for a protocol whose calls depend on the conversation), how many
of them the experiment's reply cache already holds (the calls an interrupted unit recorded, which
its resumption is answered from), and the prompt and completion tokens per unit, times the units
left, with a cost at each role's model's price (moot.models.prices: `--price`, else a price file
`--prices`, else the experiment file's `prices:`, else the scenario's `backends.NAME.prices`; a
model run in this process costs nothing; an unpriced remote model's cost is `?`), under `--batch`
at the batch rate (the price's batch share) for a model whose backend has a batch API:

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence

from moot.saved.files import iter_results
from moot.engine.plan import item_ids, variant_plan
from moot.experiment.grid import Cell, Shard, cells, in_shard, shard_folder
from moot.experiment.schema import Experiment
from moot.models.cache import held
from moot.models.prices import Prices


@dataclass(frozen=True)
class CellPlan:
    cell: Cell
    units: int
    done: int
    calls: Optional[float]  # model calls of the units left (None: the protocol cannot say)
    cached: int = 0  # of those, the calls the reply cache holds (recorded by interrupted units)


@dataclass(frozen=True)
class Usage:
    """Tokens per unit: an arm's finished units' recorded usage, or an estimate (`estimated`);
    `roles`: the prompt and completion tokens per unit of each role (what its model's price needs)."""

    prompt: float
    completion: float
    units: int
    estimated: bool = False
    roles: Mapping[str, tuple[float, float]] = field(default_factory=dict)


def usage_of(calls: Sequence[tuple[str, float, float]], units: int, estimated: bool = False) -> Usage:
    """Tokens per unit of (role, prompt tokens, completion tokens) calls over `units` units."""
    roles: dict[str, tuple[float, float]] = {}
    for role, prompt, completion in calls:
        before = roles.get(role, (0.0, 0.0))
        roles[role] = (before[0] + prompt / units, before[1] + completion / units)
    return Usage(sum(p for p, _ in roles.values()), sum(c for _, c in roles.values()), units, estimated, roles)


@dataclass(frozen=True)
class PlanPrices:
    """What --plan prices a cell's calls at: each role's model's price (module docstring)."""

    prices: Prices = Prices()
    batch: bool = False  # --batch: a model whose backend has a batch API at the price's batch share

    def cost(self, cell: Cell, used: Usage, units: int) -> Optional[float]:
        """Dollars for `units` units of `cell` at `used` tokens each; None: a model has no price."""
        from moot.api.options import RunOptions, backend_options, key_items
        from moot.engine.setup import resolve_models
        from moot.models.spec import provider_of

        scenario = cell.scenario()
        models = resolve_models(scenario, key_items(cell.model))
        backends = backend_options(RunOptions(), scenario.backends)
        total = 0.0
        for role, (prompt, completion) in used.roles.items():
            price = self.prices.of(models[role], backends) if role in models else None
            if price is None:
                return None
            batched = self.batch and provider_of(models[role]).batches is not None
            total += price.cost(prompt * units, completion * units, batched)
        return total


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
    return usage_of([(call.role, sum(len(str(m.get("content", ""))) for m in call.messages) / CHARS_PER_TOKEN,
                      1 if call.kind in ("choice", "score") else scenario.generation_for(call.role).max_tokens)
                     for call in calls], len(units), estimated=True)


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
    calls: list[tuple[str, float, float]] = []
    units = 0
    for unit in open_run(folder).units():
        if unit.row is None:
            continue
        calls.extend((c.role, c.usage.prompt_tokens, c.usage.completion_tokens) for c in unit.transcript().calls)
        units += 1
        if units == SAMPLE:
            break
    return usage_of(calls, units) if units else None


def lines(plans: Sequence[CellPlan], out: Path, shard: Optional[Shard] = None,
          prices: PlanPrices = PlanPrices()) -> list[str]:
    """The plan as a table (Markdown) with its totals."""
    folder = shard_folder(out, shard)
    rows = ["| cell | units | done | calls left | of them cached | prompt tokens left | completion tokens left | cost |",
            "|---|---|---|---|---|---|---|---|"]
    total_calls: Optional[float] = 0.0
    total_tokens: Optional[list[float]] = [0.0, 0.0]
    total_cost: Optional[float] = 0.0
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
        dollars = prices.cost(p.cell, used, left) if used is not None else None
        cost = "?" if dollars is None else f"{mark}{dollars:.4f}"
        rows.append(f"| {p.cell.key} | {p.units} | {p.done} | {'?' if p.calls is None else f'{p.calls:.0f}'} | {p.cached} | "
                    f"{'?' if tokens is None else f'{mark}{tokens[0]:.0f}'} | "
                    f"{'?' if tokens is None else f'{mark}{tokens[1]:.0f}'} | {cost} |")
        total_units += p.units
        total_left += left
        total_calls = None if total_calls is None or p.calls is None else total_calls + p.calls
        total_tokens = None if total_tokens is None or tokens is None else [total_tokens[0] + tokens[0],
                                                                            total_tokens[1] + tokens[1]]
        total_cost = None if total_cost is None or (dollars is None and left) else total_cost + (dollars or 0.0)
    calls = "?" if total_calls is None else f"{total_calls:.0f}"
    tokens_text = "?" if total_tokens is None else f"{total_tokens[0]:.0f} prompt + {total_tokens[1]:.0f} completion"
    estimated = any(u is not None for u in estimates.values())
    rate = " at the batch rate" if prices.batch else ""
    cost = f", cost {'~' if estimated else ''}{total_cost:.4f}{rate}" if total_cost is not None else ""
    cached = sum(p.cached for p in plans)
    return [*rows, "", f"{len(plans)} cells, {total_units} units ({total_units - total_left} done), "
                       f"{calls} model calls ({cached} of them cached) and {'~' if estimated else ''}{tokens_text} "
                       f"tokens left{cost}; no model was called.",
            *([f"~ estimated before any unit of the arm finished: prompts as a dry run of up to {DRY_ITEMS} items on "
               f"moot's scripted model renders them, at {CHARS_PER_TOKEN:.0f} characters a token (a rule of thumb, "
               "no tokenizer; earlier replies in later prompts are the scripted model's, shorter than a real "
               "model's); completions at the generation bound (max_tokens per text call, 1 per choice or score: "
               "an upper bound). Finished units' recorded usage replaces it."] if estimated else [])]
