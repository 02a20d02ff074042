"""What ships with moot, found by name from any directory: the bundled scenarios (their protocol
and title), experiments (their title) and demo sets (their items and labels) (`moot run --list`),
so `moot.run("drug_policy")`, `dataset="demo-stance"` and `moot.run_experiment("cola_table2")` work
wherever the caller stands. Finding one by name reads nothing (the command line's dispatcher
asks at every start); only the lists read the files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moot.api.options import PathLike
from moot.scenario import bundled


@dataclass(frozen=True)
class BundledScenario:
    """A scenario that ships with moot."""

    name: str  # what `moot run NAME` and `moot.run(NAME)` take
    protocol: str
    title: str


@dataclass(frozen=True)
class BundledExperiment:
    """An experiment file that ships with moot."""

    name: str
    title: str


@dataclass(frozen=True)
class DemoSet:
    """A bundled demo dataset: its items and their labels (in order of first appearance)."""

    name: str
    items: int
    labels: tuple[str, ...]


def _top_keys(path: Path) -> dict[str, Any]:
    """A bundled YAML file's top-level mapping."""
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def bundled_scenarios() -> list[BundledScenario]:
    """The bundled scenarios by name (a file without `protocol:` is the default protocol's)."""
    from moot.scenario.load import DEFAULT_PROTOCOL

    found = []
    for path in sorted(bundled.bundled_dir().glob("*.yaml")):
        data = _top_keys(path)
        found.append(BundledScenario(path.stem, str(data.get("protocol", DEFAULT_PROTOCOL)), str(data.get("title", ""))))
    return found


def bundled_experiments() -> list[BundledExperiment]:
    """The bundled experiments by name (`moot run NAME --plan`, `moot.run_experiment(NAME)`)."""
    return [BundledExperiment(path.stem, str(_top_keys(path).get("title", "")))
            for path in sorted(bundled.experiments_dir().glob("*.yaml"))]


def demo_sets() -> list[DemoSet]:
    """The bundled demo sets, each read whole (they are small)."""
    from moot.api.checking import dataset_columns
    from moot.data.load import iter_items, load_dataset_spec

    columns = tuple(dataset_columns())
    found = []
    for name in bundled.demo_names():
        spec = load_dataset_spec(bundled.datasets_dir() / f"{name}.yaml", columns)
        labels = tuple(dict.fromkeys(str(item.label) for item in iter_items(spec)))
        found.append(DemoSet(name, sum(1 for _ in iter_items(spec)), labels))
    return found


def scenario_names() -> list[str]:
    """The bundled scenarios' names, without reading them."""
    return bundled.bundled_names()


def demo_names() -> list[str]:
    """The bundled demo sets' names, without reading them."""
    return bundled.demo_names()


def find_dataset(given: PathLike) -> Path:
    """A dataset spec: the path as given when it exists, else the bundled one of that name
    (`demo-stance`); otherwise the path as given, for the reader to report."""
    return bundled.find_dataset(given)


def find_experiment(given: PathLike) -> Path:
    """An experiment file: the path as given when it exists, else the bundled one of that name."""
    return bundled.find_experiment(given)
