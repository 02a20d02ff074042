"""What a run does, as units: the items of a dataset, one item given by hand, or conferences.

- A protocol with inputs (COLA, S2MAD, ...) runs on a dataset (one unit per row, read lazily,
  skipped rows counted by reason) or on one item: the scenario's `input:` with `--input KEY=VALUE`
  on top. A single item's unit id is a hash of its input, so a run folder can hold many and two
  different items never share a transcript.
- A protocol without inputs (a conference) runs its scenario once (unit `conference`), or as a
  batch of variants: `--vary seed=1,2,3`, `--vary model=local,openai:gpt-4o-mini`,
  `--vary personas=SETS.yaml`; several `--vary` multiply.
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

from moot.data.load import Item, iter_items, load_dataset_spec
from moot.data.spec import DatasetSpec
from moot.contract.protocol import Protocol
from moot.engine.context import Unit
from moot.errors import UsageError, nearest
from moot.scenario.yamlsource import read_yaml

VARY_KEYS = ("seed", "model", "personas")


@dataclass
class Plan:
    """The units of a run, lazily (`units()` may be called more than once), and their count."""

    units: Callable[[], Iterator[Unit]]
    total: int
    skipped: dict[str, int] = field(default_factory=dict)
    dataset: Optional[Path] = None
    spec: Optional[DatasetSpec] = None


def inputs_of_item(protocol: Protocol, item: Item) -> dict[str, Any]:
    """A dataset row as the protocol's input (each field from the column its `source` names)."""
    values = {"text": item.text, "target": item.target, "comments": list(item.comments), "role": item.role}
    return {f.name: values[f.source] for f in protocol.inputs if f.source and values[f.source] not in (None, [], "")}


def check_inputs(protocol: Protocol, inputs: dict[str, Any], where: str) -> None:
    missing = [f.name for f in protocol.inputs if f.required and not inputs.get(f.name)]
    if missing:
        raise UsageError(f"{where}: {protocol.name} needs {', '.join(missing)}: give input.{missing[0]} in the "
                         f"scenario, --input {missing[0]}=..., or a dataset with that column")


def dataset_plan(protocol: Protocol, scenario: Any, dataset: Path, limit: Optional[int]) -> Plan:
    """One unit per dataset row; labels must be the scenario's, ids unique."""
    spec = load_dataset_spec(dataset)
    labels = set(getattr(scenario, "labels", ()) or ())
    skipped: Counter = Counter()
    seen: set[str] = set()
    total = 0
    for item in iter_items(spec, limit, skipped):
        if item.label is not None and labels and item.label not in labels:
            raise UsageError(f"{dataset}: label {item.label!r} of item {item.id} is not one of the scenario's "
                             f"labels ({', '.join(sorted(labels))}); map it under `labels:` in the dataset file")
        if item.id in seen:
            raise UsageError(f"{dataset}: item id {item.id!r} occurs twice; ids must be unique")
        seen.add(item.id)
        check_inputs(protocol, inputs_of_item(protocol, item), f"{dataset}: item {item.id}")
        total += 1
    if total == 0:
        reasons = ", ".join(f"{n} {why}" for why, n in skipped.items()) or "the file has no rows"
        raise UsageError(f"{dataset}: no items to run ({reasons})")

    def units() -> Iterator[Unit]:
        for item in iter_items(spec, limit):
            yield Unit(item.id, scenario, inputs_of_item(protocol, item), item.label)

    return Plan(units, total, dict(skipped), dataset, spec)


def parse_inputs(protocol: Protocol, pairs: Sequence[str]) -> dict[str, Any]:
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


def item_plan(protocol: Protocol, scenario: Any, pairs: Sequence[str]) -> Plan:
    """The one item of the scenario's `input:` with `--input` on top."""
    inputs = {**scenario.input_fields(), **parse_inputs(protocol, pairs)}
    inputs = {k: v for k, v in inputs.items() if v not in (None, [], "")}
    check_inputs(protocol, inputs, "input")
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
    unit = Unit(f"item-{digest[:10]}", scenario, inputs)
    return Plan(lambda: iter([unit]), 1)


def parse_vary(items: Sequence[str]) -> list[tuple[str, list[str]]]:
    axes = []
    for item in items:
        key, sep, values = item.partition("=")
        if not sep or key not in VARY_KEYS or not values.strip():
            raise UsageError(f"--vary {item!r}: expected KEY=V1,V2,... with KEY one of {', '.join(VARY_KEYS)}"
                             f"{nearest(key, VARY_KEYS)}")
        axes.append((key, [v.strip() for v in values.split(",") if v.strip()]))
    return axes


def persona_sets(path: str, scenario: Any) -> list[list[dict]]:
    """`--vary personas=SETS.yaml`: a list of persona sets, each a list of participants
    ({name, persona}) or a mapping name -> persona of the scenario's participants."""
    source = read_yaml(path)
    sets = source.data
    if not isinstance(sets, list) or not sets:
        raise UsageError(f"{path}: expected a list of persona sets")
    names = [p.name for p in scenario.participants]
    out = []
    for i, entry in enumerate(sets):
        if isinstance(entry, dict):
            unknown = [k for k in entry if k not in names]
            if unknown:
                raise UsageError(f"{path}:{source.line_of((i, unknown[0]))}: [{i}].{unknown[0]}: not a participant "
                                 f"of the scenario{nearest(str(unknown[0]), names)} (participants: {', '.join(names)})")
            out.append([{**p.model_dump(exclude_none=True), "persona": entry.get(p.name, p.persona)}
                        for p in scenario.participants])
        elif isinstance(entry, list):
            out.append(entry)
        else:
            raise UsageError(f"{path}:{source.line_of((i,))}: [{i}]: a persona set is a list of participants "
                             "or a mapping name -> persona")
    return out


def _safe(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", value)[:40]


def variant_plan(scenario: Any, vary: Sequence[str]) -> Plan:
    """The scenario once (unit `conference`), or one conference per combination of --vary values."""
    axes = parse_vary(vary)
    if not axes:
        return Plan(lambda: iter([Unit("conference", scenario)]), 1)
    choices = []
    for key, values in axes:
        if key == "personas":
            sets = persona_sets(values[0], scenario) if len(values) == 1 else None
            if sets is None:
                raise UsageError("--vary personas=FILE: one YAML file listing the persona sets")
            choices.append([(key, f"set{i + 1}", s) for i, s in enumerate(sets)])
        else:
            choices.append([(key, v, v) for v in values])
    units = []
    for combo in itertools.product(*choices):
        uid = "+".join(f"{key}-{_safe(label)}" for key, label, _ in combo)
        variant = {key: (value if key != "personas" else label) for key, label, value in combo}
        units.append(Unit(uid, apply_variant(scenario, combo), variant=variant))
    return Plan(lambda: iter(units), len(units))


def apply_variant(scenario: Any, combo) -> Any:
    """The scenario with one combination of --vary values in place (validated again)."""
    data = scenario.model_dump(exclude_unset=True)
    for key, _, value in combo:
        if key == "seed":
            try:
                seed = int(value)
            except ValueError:
                raise UsageError(f"--vary seed={value}: a seed is a whole number") from None
            data["generation"] = {**data.get("generation", {}), "seed": seed}
        elif key == "model":
            from moot.engine.setup import parse_overrides

            parse_overrides(scenario, [value])
            data["models"] = {"default": value}
            for role in ("moderator", "judge", "evaluator"):
                if data.get(role):
                    data[role] = {k: v for k, v in data[role].items() if k != "model"}
            data["participants"] = [{k: v for k, v in p.items() if k != "model"} for p in data["participants"]]
        else:
            data["participants"] = value
    try:
        return type(scenario).model_validate(data)
    except ValueError as exc:
        raise UsageError(f"--vary: the varied scenario is not valid: {' '.join(str(exc).split())[:300]}") from None
