"""Running scenarios in-process for tests: the `moot run` command with optional model doubles."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from moot.cli.run import run as run_command
from moot.log.transcript import Transcript, load


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


def run_item(protocol_name: str, scenario, inputs: dict, clients: dict, folder: Path, gold: Optional[str] = None,
             concurrency: int = 4):
    """One item of a protocol, in-process, with ready clients (by role or spec); no cache.

    Returns (UnitResult, Transcript)."""
    import asyncio

    from moot.models.engine import ModelEngine
    from moot.protocols.registry import REGISTRY
    from moot.engine.context import Unit
    from moot.engine.folder import RunFolder
    from moot.engine.runner import RunSetup, run_unit
    from moot.engine.setup import resolve_models, role_models

    protocol = REGISTRY.get(protocol_name)
    while folder.exists():  # a fresh folder each call: a finished item would be read back, not run
        folder = folder.with_name(folder.name + "+")
    models = role_models(scenario, resolve_models(scenario))
    engine = ModelEngine(concurrency=concurrency, clients=clients)
    unit = Unit("item", scenario, inputs, gold)

    async def go():
        with RunFolder(folder) as run_folder:
            return await run_unit(RunSetup(protocol, "s.yaml", "sha"), unit, run_folder, engine, models)

    result = asyncio.run(go())
    return result, load(result.transcript)
