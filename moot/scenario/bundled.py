"""Scenarios and demo datasets shipped inside the package, so `moot run drug_policy` and
`moot run cola --dataset demo-stance` work from any directory."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def bundled_dir(package: str = "moot.scenarios") -> Path:
    """The folder of the bundled scenario (or dataset) files: the repository's scenarios/
    (datasets/) when editable."""
    return Path(str(resources.files(package)))


def bundled_names(package: str = "moot.scenarios") -> list[str]:
    return sorted(p.stem for p in bundled_dir(package).glob("*.yaml"))


def find_scenario(given: str | Path) -> Path:
    """A scenario file: the path as given when it exists, else the bundled scenario of that name
    (`drug_policy` or `drug_policy.yaml`); otherwise the path as given, for the reader to report."""
    return _find(given, "moot.scenarios")


def find_dataset(given: str | Path) -> Path:
    """A dataset spec: the path as given when it exists, else the bundled one of that name
    (`demo-stance` or `demo-stance.yaml`); otherwise the path as given, for the reader to report."""
    return _find(given, "moot.datasets")


def _find(given: str | Path, package: str) -> Path:
    path = Path(given)
    if path.exists() or path.parent != Path("."):
        return path
    shipped = bundled_dir(package) / f"{path.stem}.yaml"
    return shipped if path.suffix in ("", ".yaml") and shipped.is_file() else path
