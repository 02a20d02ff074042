"""Scenarios shipped inside the package, so `moot run drug_policy` works from any directory."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def bundled_dir() -> Path:
    """The folder of the bundled scenario files (the repository's scenarios/ when editable)."""
    return Path(str(resources.files("moot.scenarios")))


def bundled_names() -> list[str]:
    return sorted(p.stem for p in bundled_dir().glob("*.yaml"))


def find_scenario(given: str | Path) -> Path:
    """A scenario file: the path as given when it exists, else the bundled scenario of that name
    (`drug_policy` or `drug_policy.yaml`); otherwise the path as given, for the reader to report."""
    path = Path(given)
    if path.exists() or path.parent != Path("."):
        return path
    shipped = bundled_dir() / f"{path.stem}.yaml"
    return shipped if path.suffix in ("", ".yaml") and shipped.is_file() else path
