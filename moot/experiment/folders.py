"""Which folders are experiments (their manifest), read without importing the statistics."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

MANIFEST = "experiment.json"


def is_experiment(path: Path) -> bool:
    return (Path(path) / MANIFEST).is_file()


def experiment_folders(paths: Iterable[Path]) -> list[Path]:
    """The experiment folders among `paths` (a folder holding an experiment's shards, and no manifest
    of its own, counts as its shard folders)."""
    found = []
    for path in paths:
        shards = sorted(p for p in Path(path).glob("shard-*-of-*") if is_experiment(p))
        found += shards if shards and not is_experiment(Path(path)) else [Path(path)]
    return found
