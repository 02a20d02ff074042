"""Which folders are experiments (their manifest), read without importing the statistics."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from moot.saved.files import read_object
from moot.saved.records import Manifest

MANIFEST = "experiment.json"


def read_manifest(out: Path) -> Optional[dict[str, Any]]:
    return read_object(out / MANIFEST, "experiment manifest", Manifest)


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


def safe(text: str) -> str:
    """A folder name from any text (model specs have colons and slashes)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:60] or "x"


def unique_stem(text: str) -> str:
    """`safe(text)`, or, when that had to cut the text short, its start and a hash of the whole: two
    files named from texts that begin alike (a long dataset name and its targets) stay two files."""
    whole = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")
    if len(whole) <= 60:
        return whole or "x"
    return f"{whole[:51]}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def same_file(kind: str, old: Mapping[str, Any], now: Mapping[str, Any]) -> bool:
    """An arm whose scenario file and overrides are as they were (its content hashed by a moot
    that hashed it another way)."""
    return kind == "arms" and old.get("sha256") == now.get("sha256") and old.get("overrides") == now.get("overrides")
