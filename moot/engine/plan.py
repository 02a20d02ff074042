"""What a run does, as units (moot.contract.units): the items of a dataset, one item given by
hand, or runs of the scenario.

- A protocol whose units are items (COLA, S2MAD, ...) runs on a dataset (one unit per row, read
  lazily, skipped rows counted by reason; each input field from the column its `source` names) or
  on one item: the scenario's `input:` with `--input KEY=VALUE` on top. A single item's unit id is
  a hash of its input, so a run folder can hold many and two different items never share a
  transcript.
- A protocol whose units are runs of the scenario (a conference) runs it once (the unit the
  protocol names, e.g. `conference`), or as a batch of variants: `--vary KEY=V1,V2,...` with the
  protocol's vary keys (moot.contract.vary: `seed`, `model`, its own); several `--vary` multiply.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

from pydantic import BaseModel

from moot.data.load import Item, iter_items, load_dataset_spec
from moot.data.spec import DatasetSpec
from moot.contract.protocol import Protocol
from moot.kit._context import Unit
from moot.contract.vary import Choice, Data, VaryKey, find_key
from moot.errors import MootError, UsageError, nearest
from moot.safety.utf8 import refuse_undecodable
from moot.scenario.blocks import ScenarioBase


@dataclass
class Plan:
    """The units of a run, lazily (`units()` may be called more than once), and their count."""

    units: Callable[[], Iterator[Unit]]
    total: int
    skipped: dict[str, int] = field(default_factory=dict)
    dataset: Optional[Path] = None
    spec: Optional[DatasetSpec] = None


def inputs_of_item(protocol: Protocol[Any], item: Item) -> dict[str, Any]:
    """A dataset row as the protocol's input (each field from the column its `source` names)."""
    values = {f.name: item.value(f.source) for f in protocol.inputs if f.source}
    return {name: value for name, value in values.items() if value not in (None, [], "")}


def input_columns(protocol: Protocol[Any]) -> list[str]:
    """The dataset column keys the protocol's inputs are filled from."""
    return [f.source for f in protocol.inputs if f.source]


def check_inputs(protocol: Protocol[Any], inputs: dict[str, Any], where: str) -> None:
    missing = [f.name for f in protocol.inputs if f.required and not inputs.get(f.name)]
    if missing:
        raise UsageError(f"{where}: {protocol.name} needs {', '.join(missing)}: give input.{missing[0]} in the "
                         f"scenario, --input {missing[0]}=..., or a dataset with that column")


def item_ids(protocol: Protocol[Any], scenario: ScenarioBase, dataset: Path, limit: Optional[int],
             skipped: Optional[Counter[str]] = None) -> tuple[DatasetSpec, list[str]]:
    """The dataset's spec and the ids of the items a run would run, in order, after the checks it
    makes: labels must be the scenario's, ids unique, the protocol's inputs there."""
    spec = load_dataset_spec(dataset, input_columns(protocol))
    labels = set(scenario.label_set())
    skipped = Counter() if skipped is None else skipped
    seen: dict[str, None] = {}
    for item in iter_items(spec, limit, skipped):
        if item.label is not None and labels and item.label not in labels:
            raise UsageError(f"{dataset}: label {item.label!r} of item {item.id} is not one of the scenario's "
                             f"labels ({', '.join(sorted(labels))}); map it under `labels:` in the dataset file")
        if item.id in seen:
            raise UsageError(f"{dataset}: item id {item.id!r} occurs twice; ids must be unique")
        seen[item.id] = None
        check_inputs(protocol, inputs_of_item(protocol, item), f"{dataset}: item {item.id}")
    if not seen:
        reasons = ", ".join(f"{n} {why}" for why, n in skipped.items()) or "the file has no rows"
        raise UsageError(f"{dataset}: no items to run ({reasons})")
    return spec, list(seen)


def dataset_plan(protocol: Protocol[Any], scenario: ScenarioBase, dataset: Path, limit: Optional[int]) -> Plan:
    """One unit per dataset row (item_ids says which)."""
    skipped: Counter[str] = Counter()
    spec, ids = item_ids(protocol, scenario, dataset, limit, skipped)

    def units() -> Iterator[Unit]:
        for item in iter_items(spec, limit):
            yield Unit(item.id, scenario, inputs_of_item(protocol, item), item.label)

    return Plan(units, len(ids), dict(skipped), dataset, spec)


def parse_inputs(protocol: Protocol[Any], pairs: Sequence[str]) -> dict[str, Any]:
    """`KEY=VALUE` pairs; a `many` field may repeat (`--input comment=...` adds to `comments`)."""
    fields = {f.name: f for f in protocol.inputs}
    singular = {f.name.rstrip("s"): f for f in protocol.inputs if f.many}
    given: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        field_ = fields.get(key) or singular.get(key)
        if not sep or field_ is None:
            names = list(fields) + list(singular)
            raise UsageError(f"--input {pair!r}: expected KEY=VALUE with KEY one of {', '.join(fields)}"
                             f"{nearest(key, names)}")
        if field_.many:
            given.setdefault(field_.name, []).append(value)
        else:
            given[field_.name] = value
    return given


def item_plan(protocol: Protocol[Any], scenario: ScenarioBase, pairs: Sequence[str]) -> Plan:
    """The one item of the scenario's `input:` with `--input` on top."""
    inputs = {**scenario.input_fields(), **parse_inputs(protocol, pairs)}
    inputs = {k: v for k, v in inputs.items() if v not in (None, [], "")}
    check_inputs(protocol, inputs, "input")
    refuse_undecodable(inputs, "input")  # before its id is made of it
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
    unit = Unit(f"item-{digest[:10]}", scenario, inputs)
    return Plan(lambda: iter([unit]), 1)


def parse_vary(protocol: Protocol[Any], items: Sequence[str]) -> list[tuple[VaryKey, list[str]]]:
    """`KEY=V1,V2,...` items, KEY one of the protocol's vary keys."""
    names = [k.name for k in protocol.vary]
    axes = []
    for item in items:
        name, sep, values = item.partition("=")
        key = find_key(protocol.vary, name)
        if not sep or key is None or not values.strip():
            raise UsageError(f"--vary {item!r}: expected KEY=V1,V2,... with KEY one of {', '.join(names)}"
                             f"{nearest(name, names)}")
        axes.append((key, [v.strip() for v in values.split(",") if v.strip()]))
    return axes


def _safe(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", value)[:40]


def choices_of(key: VaryKey, values: Sequence[str], scenario: BaseModel) -> list[Choice]:
    try:
        return key.choices(values, scenario)
    except MootError:
        raise
    except ValueError as exc:
        raise UsageError(f"--vary {key.name}: {exc}") from None


def variant_plan(protocol: Protocol[Any], scenario: ScenarioBase, vary: Sequence[str]) -> Plan:
    """The scenario once (the protocol's single unit), or one unit per combination of --vary values."""
    axes = parse_vary(protocol, vary)
    if not axes:
        return Plan(lambda: iter([Unit(protocol.units.single, scenario)]), 1)
    choices = [[(key, choice) for choice in choices_of(key, values, scenario)] for key, values in axes]
    units = []
    for combo in itertools.product(*choices):
        uid = "+".join(f"{key.name}-{_safe(choice.label)}" for key, choice in combo)
        variant = {key.name: choice.label for key, choice in combo}
        units.append(Unit(uid, apply_variant(scenario, combo), variant=variant))
    return Plan(lambda: iter(units), len(units))


def apply_variant(scenario: ScenarioBase, combo: Sequence[tuple[VaryKey, Choice]]) -> ScenarioBase:
    """The scenario with one combination of --vary values in place (validated again)."""
    data: Data = scenario.model_dump(exclude_unset=True)
    for key, choice in combo:
        try:
            data = key.apply(data, choice.value)
        except MootError:
            raise
        except ValueError as exc:
            raise UsageError(f"--vary {key.name}={choice.label}: {exc}") from None
    try:
        return type(scenario).model_validate(data)
    except ValueError as exc:
        raise UsageError(f"--vary: the varied scenario is not valid: {' '.join(str(exc).split())[:300]}") from None
