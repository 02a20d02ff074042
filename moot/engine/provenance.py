"""What a run ran on, recorded in run.json (`environment`) so a reader can check its numbers:
moot's version and, imported from a git checkout, its commit; the versions of the libraries the
numbers depend on; each local model file's size and sha256.

Nothing here needs a network or fails outside a checkout: a commit that cannot be read (no
checkout, no git, a slow one) or a library that is not installed is recorded as null. A model
file's sha256 (a 250 MB GGUF takes seconds) is computed once per file stamp (size and modification
time) and kept in the user's cache folder for moot, so later runs on the same file read it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
from contextlib import suppress
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping, Optional

from moot.models.backends.local.extra_buffers import cache_root, read_store
from moot.models.spec import parse_spec, provider_of
from moot.safety.diskio import write_atomic

PACKAGES = ("numpy", "scipy", "pandas", "pyautogen", "autogen-agentchat", "autogen-core", "autogen-ext", "openai",
            "llama-cpp-python", "pydantic")
HASHES_FILE = "model-files.json"
GIT_TIMEOUT_S = 3.0
CHUNK = 1 << 20


def environment(models: Mapping[str, str]) -> dict[str, Any]:
    """run.json's `environment` for a run whose roles use `models` (role -> spec)."""
    from moot.version import __version__

    return {"moot": {"version": __version__, "commit": moot_commit()}, "python": platform.python_version(),
            "packages": package_versions(), "model_files": model_files(models)}


def package_versions() -> dict[str, Optional[str]]:
    """Each library's installed version (importlib.metadata), None when it is not installed."""
    found: dict[str, Optional[str]] = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


@lru_cache(maxsize=1)
def moot_commit() -> Optional[str]:
    """The commit of the git checkout moot is imported from (None: not from a checkout, or git
    could not say in time). Local only: `git rev-parse HEAD` never asks a remote."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}  # this checkout, not another's
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", commit) else None


def model_files(models: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Each local model file the roles use, by path: its size and sha256 (None: unreadable)."""
    specs = {parse_spec(spec) for spec in models.values()}
    paths = sorted({path for spec in specs if (path := provider_of(spec).model_file(spec))})
    return {path: file_identity(Path(path)) for path in paths}


def file_identity(path: Path, store: Optional[Path] = None) -> dict[str, Any]:
    """A file's size and sha256, hashed once per stamp (size, modification time) and kept in `store`
    (default: model-files.json in moot's cache folder); an unreadable file has neither."""
    store = store or cache_root() / HASHES_FILE
    try:
        status = path.stat()
    except OSError:
        return {"size": None, "sha256": None}
    key, stamp = str(path.resolve()), [status.st_size, status.st_mtime_ns]
    kept = read_store(store)
    entry = kept.get(key)
    if isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("sha256"), str):
        return {"size": status.st_size, "sha256": entry["sha256"]}
    try:
        digest = _sha256(path)
    except OSError:
        return {"size": status.st_size, "sha256": None}
    with suppress(OSError):  # a read-only cache: hashed again next time
        store.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(store, json.dumps({**kept, key: {"stamp": stamp, "sha256": digest}}, indent=1) + "\n")
    return {"size": status.st_size, "sha256": digest}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()
