"""The shards of a sharded experiment that are not done, and the command that runs each again.

A report over shard folders (OUT/shard-I-of-N, one per machine or job: a Slurm array task, a
Kubernetes indexed pod) names each shard that is missing (no folder given), failed (a cell
failed) or unfinished (a cell planned or interrupted: a job killed, or still running), with
`moot run FILE --shard I/N --out OUT`: the same command continues it, keeping its finished units.
The command repeats the options the shard's run gave beyond its experiment file (`--limit`,
`--repeat`, `--model`, `--max-cost`), read by comparing the manifest with the file, and `--batch`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from moot.safety.yamlsource import SourceError, read_yaml

Manifests = Sequence[tuple[Path, Optional[Mapping[str, Any]]]]


@dataclass(frozen=True)
class ShardState:
    """A shard not done: `shard` is `I/N`, `state` missing, failed or unfinished, `cells` how many
    of its cells are not completed (None: missing), `command` what runs it again."""

    shard: str
    state: str
    cells: Optional[int]
    total: int
    command: str

    def line(self) -> str:
        how = "" if self.cells is None else f" ({self.cells} of {self.total} cells)"
        return f"{self.shard} {self.state}{how}: {self.command}"


def shard_of(manifest: Mapping[str, Any]) -> Optional[tuple[int, int]]:
    given = manifest.get("shard")
    return (int(given[0]), int(given[1])) if isinstance(given, list) and len(given) == 2 else None


def state_of(cells: Sequence[Mapping[str, Any]]) -> tuple[Optional[str], int]:
    """failed, unfinished or None (every cell completed), and how many cells are not completed."""
    left = [c.get("status") for c in cells if c.get("status") != "completed"]
    if not left:
        return None, 0
    return ("failed" if "failed" in left else "unfinished"), len(left)


def not_done(manifests: Manifests) -> list[ShardState]:
    """Each shard of the sharded experiment these folders hold that is missing, failed or
    unfinished, in shard order."""
    given: dict[tuple[int, int], tuple[Path, Mapping[str, Any]]] = {}
    for root, manifest in manifests:
        shard = shard_of(manifest) if manifest else None
        if manifest and shard:
            given[shard] = (root, manifest)
    if not given:
        return []
    root, base = next(iter(given.values()))
    out = root.parent
    found = []
    for n in sorted({n for _, n in given}):
        for i in range(1, n + 1):
            held = given.get((i, n))
            state, left = state_of(held[1].get("cells", [])) if held else ("missing", 0)
            if state is not None:
                manifest = held[1] if held else base
                found.append(ShardState(f"{i}/{n}", state, left if held else None, len(manifest.get("cells", [])),
                                        rerun_command(manifest, held[0].parent if held else out, (i, n))))
    return found


def rerun_command(manifest: Mapping[str, Any], out: Path, shard: tuple[int, int]) -> str:
    """`moot run FILE --shard I/N --out OUT` with the options its run gave beyond the file."""
    file = str(manifest.get("file") or "EXPERIMENT.yaml")
    words = ["moot", "run", file, "--shard", f"{shard[0]}/{shard[1]}", "--out", str(out), *overrides(manifest, file)]
    return " ".join(shlex.quote(w) for w in words)


def overrides(manifest: Mapping[str, Any], file: str) -> list[str]:
    """`--limit`, `--repeat`, `--model` and `--max-cost` where the manifest differs from its file (all of
    them, as recorded, when the file cannot be read); `--batch` when the run was batched."""
    try:
        data = read_yaml(file).data
    except (SourceError, OSError):
        data = None
    written: Mapping[str, Any] = data if isinstance(data, dict) else {}
    found: list[str] = []
    limit = manifest.get("limit")
    if limit is not None and (data is None or written.get("limit") != limit):
        found += ["--limit", str(limit)]
    repeats = manifest.get("repeats")
    if repeats and not written.get("seeds") and (data is None or written.get("repeats", 1) != repeats):
        found += ["--repeat", str(repeats)]
    models = list(dict.fromkeys(str(c.get("model")) for c in manifest.get("cells", [])
                                if c.get("model") not in (None, "default")))
    if models and (data is None or list(written.get("models") or ()) != models):
        for model in models:
            found += ["--model", model]
    max_cost = manifest.get("max_cost")
    if isinstance(max_cost, (int, float)) and not isinstance(max_cost, bool) \
            and (data is None or written.get("max_cost") != max_cost):
        found += ["--max-cost", f"{max_cost:.15g}"]
    if manifest.get("batch") is True:
        found.append("--batch")
    return found
