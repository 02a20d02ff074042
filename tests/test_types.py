"""The package type-checks: mypy, strict ([tool.mypy] in pyproject.toml), on `moot` as it installs.

The card's folders (agents/, speaker_selection/, ...) install inside moot (pyproject's package-dir),
which mypy cannot map from the source tree, so it checks a tree of links laid out as installed."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def installed_layout(dest: Path) -> Path:
    """`dest/moot`: links to moot/'s entries and to each folder pyproject maps into moot."""
    mapped = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    package = dest / "moot"
    package.mkdir()
    for entry in (ROOT / "moot").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, folder in mapped.items():
        if (ROOT / folder / "__init__.py").exists():
            (package / name.removeprefix("moot.")).symlink_to(ROOT / folder)
    return package


def mypy(tree: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp / "cache"), "--no-error-summary", "--hide-error-context", str(tree)],
        cwd=tmp, capture_output=True, text=True, timeout=600)


def test_moot_type_checks_strictly(tmp_path):
    tree = installed_layout(tmp_path)
    checked = mypy(tree, tmp_path)
    report = checked.stdout.replace(str(tree) + "/", "moot/") + checked.stderr
    assert checked.returncode == 0, report
