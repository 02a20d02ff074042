"""The scenario keys a protocol lets `--vary` (and experiments) change, and how a value applies.

`--vary KEY=V1,V2,...` makes one unit per value (several `--vary` multiply). A key is declared by
the protocol as a `VaryKey`: its name, one line of help, how the values given on the command line
become choices (`choices`; default: one per value; e.g. `personas=SETS.yaml` reads a file of
persona sets), and how a choice changes the scenario's data (`apply`, on the scenario dumped with
`model_dump(exclude_unset=True)`; the result is validated again). `seed` and `model` mean the same
for every protocol (SEED, MODEL); a protocol may refine `model` (a conference also drops the
models its agents name) or add keys of its own.

`set_path` changes any key by its dotted path (`judge.form`, `models.judger`): what an experiment's
arm overrides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from pydantic import BaseModel

from moot.models.spec import parse_spec

Data = dict[str, object]  # a scenario's data, as `model_dump(exclude_unset=True)` gives it


@dataclass(frozen=True)
class Choice:
    """One value of a varied key: `label` names it (unit ids, `variant`), `value` is applied."""

    label: str
    value: object


Choices = Callable[[Sequence[str], BaseModel], list[Choice]]  # (values given, scenario) -> choices
Apply = Callable[[Data, object], Data]  # (scenario data, a choice's value) -> new data


def each_value(values: Sequence[str], scenario: BaseModel) -> list[Choice]:
    """One choice per value given, labelled by itself."""
    return [Choice(v, v) for v in values]


@dataclass(frozen=True)
class VaryKey:
    """A scenario key `--vary` may change; see the module docstring. `apply` and `choices`
    raise ValueError with a message for the user (moot names the key and value before it)."""

    name: str
    help: str
    apply: Apply
    choices: Choices = each_value


def apply_seed(data: Data, value: object) -> Data:
    try:
        seed = int(str(value))
    except ValueError:
        raise ValueError("a seed is a whole number") from None
    return set_path(data, "generation.seed", seed)


def apply_model(data: Data, value: object) -> Data:
    """Every role on one model: `models: {default: SPEC}` (role-specific entries dropped)."""
    spec = str(value)
    parse_spec(spec)  # its ValueError names the problem (unknown provider, ...)
    return {**data, "models": {"default": spec}}


SEED = VaryKey("seed", "the generation seed of every role", apply_seed)
MODEL = VaryKey("model", "every role on this model spec", apply_model)
GENERIC: tuple[VaryKey, ...] = (SEED, MODEL)


def set_path(data: Data, path: str, value: object) -> Data:
    """`data` with the key at dotted `path` set to `value` (mappings on the way are copied, missing
    ones made), the rest untouched."""
    head, _, rest = path.partition(".")
    if not rest:
        return {**data, head: value}
    inner = data.get(head)
    return {**data, head: set_path(dict(inner) if isinstance(inner, dict) else {}, rest, value)}


def find_key(keys: Sequence[VaryKey], name: str) -> Optional[VaryKey]:
    return next((k for k in keys if k.name == name), None)
