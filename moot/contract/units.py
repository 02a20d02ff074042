"""What one unit of a protocol is: how the engine plans units, counts them and pairs them across runs.

A protocol's units are either

- `items` of a dataset: each unit is one row, its input fields filled from the dataset columns
  the protocol declares (`InputField.source`), or one item given by hand (`input:`, `--input`);
- `runs` of the scenario itself: the scenario is the input, so a run is the scenario once, or
  a batch of variants (`--vary seed=1,2,3`: moot.contract.vary).

`pair` says which units of two runs are the same unit (for paired comparisons between runs): an
item by its id, a run of the scenario by its seed (the variant keys a comparison varies differ by
definition, so only the seed pairs them). Pairing reads only a results row and run.json, never a
transcript, so it scales to large runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal, Mapping, Optional

from moot.saved.records import ResultRow, RunMeta, whole

UnitKind = Literal["items", "runs"]


@dataclass(frozen=True)
class InputField:
    """One field of a protocol's input; `source` is the dataset column key that fills it (any name:
    `text`, `target`, `comments`, `role`, or one of the protocol's own, such as `question`)."""

    name: str
    source: Optional[str] = None
    required: bool = True
    many: bool = False  # a list (S2MAD's comments); `--input NAME=...` may repeat
    help: str = ""


@dataclass(frozen=True)
class UnitKey:
    """What identifies a finished unit across runs: its id, its variant and its seed."""

    id: str
    variant: Mapping[str, str] = field(default_factory=dict)
    seed: Optional[int] = None


PairKey = Callable[[UnitKey], str]


def by_id(unit: UnitKey) -> str:
    """Items pair by their id (the dataset's id column, or the row index)."""
    return unit.id


def by_seed(unit: UnitKey) -> str:
    """Runs of a scenario pair by seed: the same seed in two arms is the same draw."""
    return f"seed={unit.seed}" if unit.seed is not None else unit.id


def unit_key(row: ResultRow, meta: RunMeta) -> UnitKey:
    """A results row's UnitKey; the seed is the variant's, else the scenario's in run.json."""
    variant = row.variant_text
    seed = whole(variant.get("seed"))
    return UnitKey(row.id, variant, meta.seed if seed is None else seed)


@dataclass(frozen=True)
class Units:
    """How a protocol's work is cut into units (see the module docstring)."""

    kind: UnitKind
    noun: str  # counted units, plural: "items", "conferences"
    single: str = "run"  # the one unit of a run of the scenario without variants (its id)
    pair: PairKey = by_id

    @property
    def items(self) -> bool:
        """Units are rows of a dataset (or one item given by hand)."""
        return self.kind == "items"


ITEMS = Units("items", "items")


def scenario_runs(noun: str = "runs", single: str = "run") -> Units:
    """Units that are runs of the scenario itself, paired by seed."""
    return Units("runs", noun, single, by_seed)
