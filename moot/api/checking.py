"""Scenario files and dataset specs checked without running anything (`moot validate`; experiment
files are checked above, by moot.experiment.api.validate, which calls this for the others).

A dataset spec (a DATA.yaml: `path:` and `columns:`, no `protocol:`) is checked as one, its data
file included; its `columns:` may name the inputs of any registered protocol.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from moot.api.options import PathLike
from moot.data.spec import DatasetError, load_dataset_spec
from moot.protocols.registry import REGISTRY
from moot.scenario.load import scenario_errors

DATASET_KEYS = {"path", "columns"}


def is_dataset_spec(data: Any) -> bool:
    """A DATA.yaml rather than a scenario: no `protocol:`, and a dataset's `path:` or `columns:`
    (either one, so a spec with a typo in the other is still checked as a spec)."""
    return isinstance(data, dict) and "protocol" not in data and bool(DATASET_KEYS & data.keys())


def dataset_columns() -> list[str]:
    """The dataset column keys any registered protocol's inputs are filled from."""
    return [f.source for p in REGISTRY.all(from_yaml=False) for f in p.inputs if f.source]


def file_problems(path: PathLike, data: Any) -> list[str]:
    """Every problem of a scenario file or a dataset spec (`data`: its YAML, read), one line each."""
    if not is_dataset_spec(data):
        return [str(error) for error in scenario_errors(Path(path))]
    try:
        load_dataset_spec(Path(path), dataset_columns())
    except DatasetError as exc:
        return [str(exc)]
    return []
