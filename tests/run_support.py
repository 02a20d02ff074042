"""Running scenarios in-process for tests: the `moot run` command with optional model doubles."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from moot.cli.run import run as run_command
from moot.transcript import Transcript, load


def run_scenario(path: Path, out: Path, models: Sequence[str] = ("scripted",), clients: Optional[dict] = None,
                 extra: Sequence[str] = ()) -> int:
    """`moot run PATH --out OUT --quiet --model ...`; `clients` by role or spec."""
    argv = [str(path), "--out", str(out), "--quiet", *extra]
    for spec in models:
        argv += ["--model", spec]
    return run_command(argv, clients)


def conference(out: Path, unit: str = "conference") -> Transcript:
    """The transcript of a conference run folder."""
    return load(Path(out) / f"{unit}.jsonl")


def without_calls(transcript: Transcript) -> list[str]:
    """Event types in order, `call` events left out (each turn's call precedes its message)."""
    return [e.type for e in transcript.events if e.type != "call"]
