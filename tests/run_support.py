"""Running scenarios in-process for tests: the `moot run` command with optional model doubles."""

from __future__ import annotations

import io
import json
import sys
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
    from moot.kit._context import Unit
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


# ------------------------------------------------------------------ runs rated blind (moot annotate)
def scored_conference(make_scenario, tmp_path: Path, topics: int = 5) -> Path:
    """A finished conference (scripted models) whose judge verdicts vary and whose evaluator's ten
    scores differ from topic to topic: what people rate (tests of moot annotate and its agreement)."""
    import numpy as np

    from moot.models.backends.scripted.client import ScriptedChatCompletionClient
    from moot.protocols.conference.verdicts import CRITERIA

    class Scoring(ScriptedChatCompletionClient):
        def __init__(self, sets):
            super().__init__()
            self.sets = list(sets)

        def _reply(self, messages, json_output):
            scores = self.sets.pop(0)
            return json.dumps({**dict(zip(CRITERIA, scores)), "overall": scores[0], "rationale": "scripted"})

    rng = np.random.default_rng(11)
    sets = [[int(v) for v in rng.integers(3, 10, len(CRITERIA))] for _ in range(topics)]
    judge = ScriptedChatCompletionClient(["MORE_DEBATE", "AGREEMENT", "AGREEMENT", "MORE_DEBATE", "MORE_DEBATE",
                                          "AGREEMENT", "AGREEMENT", "AGREEMENT"])
    clients = {"Judge": judge, "Evaluator": Scoring(sets), **{n: ScriptedChatCompletionClient()
                                                             for n in ("Moderator", "Alice", "Bob")}}
    out = tmp_path / "run"
    assert run_scenario(make_scenario(topics=topics), out, ("scripted",), clients) == 0
    return out


def annotate_at_terminal(out: Path, rater: str, answers: list[str], monkeypatch, capsys) -> str:
    """`moot annotate OUT --rater RATER` with `answers` typed at the terminal (stdin); what it printed."""
    from moot.cli import main

    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(f"{a}\n" for a in answers)))
    capsys.readouterr()
    assert main(["annotate", str(out), "--rater", rater]) == 0
    return capsys.readouterr().out
