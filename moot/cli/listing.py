"""`moot run --list`: what ships with moot, each with what it is: the scenarios (their protocol and
title), the experiments (their title) and the demo sets (their items and labels)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import yaml

from moot.api.checking import dataset_columns
from moot.data.load import iter_items, load_dataset_spec
from moot.scenario.bundled import bundled_dir, datasets_dir, demo_names, experiments_dir
from moot.scenario.load import DEFAULT_PROTOCOL
from moot.safety.neutral import terminal_safe


def top_keys(path: Path) -> dict[str, Any]:
    """A bundled YAML file's top-level mapping."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def scenarios() -> Iterator[tuple[str, str]]:
    for path in sorted(bundled_dir().glob("*.yaml")):
        data = top_keys(path)
        yield path.stem, f"{data.get('protocol', DEFAULT_PROTOCOL):<12} {data.get('title', '')}"


def experiments() -> Iterator[tuple[str, str]]:
    for path in sorted(experiments_dir().glob("*.yaml")):
        yield path.stem, str(top_keys(path).get("title", ""))


def demo_sets() -> Iterator[tuple[str, str]]:
    columns = tuple(dataset_columns())
    for name in demo_names():
        spec = load_dataset_spec(datasets_dir() / f"{name}.yaml", columns)
        labels = list(dict.fromkeys(item.label for item in iter_items(spec)))
        yield name, f"{sum(1 for _ in iter_items(spec))} items, labels {' / '.join(map(str, labels))}"


SECTIONS = (("scenarios (moot run NAME; protocol, title)", scenarios),
            ("experiments (moot run NAME --plan, then moot run NAME)", experiments),
            ("demo sets (moot run SCENARIO --dataset NAME)", demo_sets))


def listing() -> str:
    lines = []
    for heading, rows in SECTIONS:
        found = list(rows())
        width = max(len(name) for name, _ in found)
        lines += [f"{heading}:", *(f"  {name:<{width}}  {text}" for name, text in found), ""]
    return terminal_safe("\n".join(lines).rstrip())
