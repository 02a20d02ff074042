"""Per-item protocols (COLA, ...): declared in YAML with `protocol: NAME`, run on one item or a dataset.

Each protocol module exposes NAME, SCHEMA (the pydantic scenario model), INPUT_KEYS (and
LIST_KEYS) for `--input`, roles(scenario), labels_of(scenario), from_fields(scenario, id, fields),
from_dataset(scenario, item) and `async run_item(scenario, ctx, item) -> Outcome`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Optional, Sequence

import yaml

PROTOCOLS = {"cola": "moot.protocols.cola", "s2mad": "moot.protocols.s2mad",
             "negotiation": "moot.protocols.negotiation"}
VALUE_OPTIONS = ("--dataset", "--out", "--cache", "--input", "--model", "--resume")


def protocol_module(name: str) -> ModuleType:
    return importlib.import_module(PROTOCOLS[name])


def schema_for(name: object):
    """The scenario model of a per-item protocol, or None (then it is a conference)."""
    return protocol_module(name).SCHEMA if isinstance(name, str) and name in PROTOCOLS else None


def protocol_in_argv(argv: Sequence[str]) -> Optional[str]:
    """The `protocol:` of the scenario named in a run command line: the first existing .yaml
    argument that is not an option's value (`--dataset DATA.yaml` is not the scenario)."""
    skip = False
    for token in argv:
        if skip or token.startswith("-"):
            skip = token in VALUE_OPTIONS
            continue
        path = Path(token)
        if path.suffix in (".yaml", ".yml") and path.is_file():
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (yaml.YAMLError, OSError, UnicodeDecodeError):
                return None
            return data.get("protocol") if isinstance(data, dict) else None
    return None
