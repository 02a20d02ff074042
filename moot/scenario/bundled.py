"""Scenarios, demo datasets and experiments shipped inside the package, so `moot run drug_policy`,
`moot run cola --dataset demo-stance` and `moot run cola_table2` work from any directory."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def bundled_dir() -> Path:
    """The folder of the bundled scenario files (the repository's scenarios/ when editable)."""
    return Path(str(resources.files("moot.scenarios")))


def datasets_dir() -> Path:
    """The folder of the bundled dataset specs: beside the scenarios, in the repository
    (datasets/) as installed (moot/datasets/), so an editable install made before it existed
    finds it too."""
    return bundled_dir().parent / "datasets"


def bundled_names() -> list[str]:
    return sorted(p.stem for p in bundled_dir().glob("*.yaml"))


def demo_names() -> list[str]:
    """The bundled demo sets, which `--dataset NAME` finds from any directory."""
    return sorted(p.stem for p in datasets_dir().glob("demo-*.yaml"))


def find_scenario(given: str | Path) -> Path:
    """A scenario file: the path as given when it exists, else the bundled scenario of that name
    (`drug_policy` or `drug_policy.yaml`); otherwise the path as given, for the reader to report."""
    return _find(given, bundled_dir())


def find_dataset(given: str | os.PathLike[str]) -> Path:
    """A dataset spec: the path as given when it exists, else the bundled one of that name
    (`demo-stance` or `demo-stance.yaml`); otherwise the path as given, for the reader to report."""
    return _find(given, datasets_dir())


def experiments_dir() -> Path:
    """The folder of the bundled experiment files (the repository's experiments/ when editable)."""
    return Path(str(resources.files("moot.experiments")))


def find_experiment(given: str | os.PathLike[str]) -> Path:
    """An experiment file: the path as given when it exists, else the bundled experiment of that
    name (experiments/, installed as moot.experiments); otherwise the path as given."""
    return _find(given, experiments_dir())


def _find(given: str | os.PathLike[str], folder: Path) -> Path:
    """A folder of that name (`moot run cola --out cola` made one) is not the file asked for."""
    path = Path(given)
    if (path.exists() and not path.is_dir()) or path.parent != Path("."):
        return path
    shipped = folder / f"{path.stem}.yaml"
    return shipped if path.suffix in ("", ".yaml") and shipped.is_file() else path
