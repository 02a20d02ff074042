"""The package type-checks: mypy, strict ([tool.mypy] in pyproject.toml), on `moot` as it installs.

The card's folders (agents/, speaker_selection/, ...) install inside moot (pyproject's package-dir),
which mypy cannot map from the source tree, so it checks a tree of links laid out as installed.
The tree and mypy's cache live in .mypy_cache/ (ignored by git): a second run rechecks only the
modules that changed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".mypy_cache"


def installed_layout(dest: Path) -> Path:
    """`dest/moot`: links to moot/'s entries and to each folder pyproject maps into moot."""
    mapped = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    shutil.rmtree(dest, ignore_errors=True)
    package = dest / "moot"
    package.mkdir(parents=True)
    for entry in (ROOT / "moot").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, folder in mapped.items():
        if (ROOT / folder / "__init__.py").exists():
            (package / name.removeprefix("moot.")).symlink_to(ROOT / folder)
    return package


def test_moot_type_checks_strictly():
    tree = installed_layout(CACHE / "layout")
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(CACHE),
         "--no-error-summary", "--hide-error-context", str(tree)],
        cwd=tree.parent, capture_output=True, text=True, timeout=600)
    assert checked.returncode == 0, checked.stdout.replace(str(tree) + "/", "moot/") + checked.stderr
