"""`--model scripted` plays every protocol end to end: each declares what a scripted answer to its
questions looks like (Protocol.scripted, moot.models.expect), so its demo runs with every answer
read, deterministic per seed and varied across seeds."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest

from moot.cli import main
from moot.log.transcript import load
from moot.metrics.classification import UNPARSED
from moot.models.expect import Expected, expected, picked
from moot.protocols.registry import REGISTRY
from moot.scenario.bundled import find_scenario
from moot.scenario.load import load_scenario

ROOT = Path(__file__).resolve().parent.parent
# Each protocol's demo: a bundled scenario on a demo dataset (a protocol added without one fails below).
DEMOS = {
    "conference": ["run", "drug_policy"],
    "cola": ["run", "cola", "--dataset", "datasets/demo-stance.yaml", "--limit", "3"],
    "s2mad": ["run", "s2mad", "--dataset", "datasets/demo-rumour-veracity.yaml", "--limit", "3"],
    "negotiation": ["run", "negotiation", "--dataset", "datasets/demo-sentiment.yaml", "--limit", "3"],
    "debate": ["run", "debate", "--dataset", "datasets/demo-stance.yaml", "--limit", "3"],
    "chateval": ["run", "chateval", "--dataset", "datasets/demo-preference.yaml", "--limit", "3"],
    "judge_eval": ["judge-eval", "datasets/demo-stance.yaml", "--task", "stance", "--limit", "3"],
}


def test_every_registered_protocol_declares_its_scripted_answers():
    names = REGISTRY.names(from_yaml=False)
    assert sorted(DEMOS) == sorted(names), "a protocol needs a scripted declaration and a demo here"
    undeclared = [p.name for p in REGISTRY.all(from_yaml=False) if p.scripted is None]
    assert undeclared == []


@pytest.mark.parametrize("name", [n for n in DEMOS if REGISTRY.get(n).from_yaml])
def test_a_declaration_fills_every_field_of_its_templates(name):
    protocol = REGISTRY.get(name)
    declared = protocol.expected(load_scenario(find_scenario(protocol.example)))
    for stage, form in declared.items():
        assert isinstance(form, Expected)
        fields = {f for _, f, _, _ in string.Formatter().parse(form.template) if f}
        assert fields == {field for field, _ in form.choices}, stage
        assert all(options for _, options in form.choices), stage


def test_an_option_is_fixed_by_the_seed_and_the_prompt_and_varies_across_seeds():
    options = ("favor", "against", "neutral")
    assert picked(options, 3, "a prompt") == picked(options, 3, "a prompt")
    assert len({picked(options, seed, "a prompt") for seed in range(12)}) == 3
    form = expected("Answer: {label}", label=options)
    assert form.filled(0, "p", given="against") == "Answer: against"  # a test's mark wins
    assert form.filled(0, "p", given="other") in {f"Answer: {o}" for o in options}


def decisions(out: Path) -> list[str]:
    """Every decision the run's transcripts recorded (an answer read, or unparsed)."""
    return [m.decision for path in sorted(out.glob("*.jsonl")) if path.name != "results.jsonl"
            for m in load(path).messages if m.decision is not None]


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_the_scripted_model_plays_each_protocol_s_demo(name, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "run"
    assert main([*DEMOS[name], "--model", "scripted", "--out", str(out), "--quiet"]) == 0
    said = decisions(out)
    # every answer read (an item may still end unparsed by its protocol's own rule: negotiations
    # that never agree, with no third LLM to settle them)
    assert said and UNPARSED not in said
    if REGISTRY.get(name).units.items:
        rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        assert len(rows) == 3 and all(r["status"] == "completed" and "prediction" in r for r in rows)


def test_scripted_runs_are_fixed_by_the_seed_and_vary_across_seeds(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)

    def run(seed: int, out: str) -> list[str]:
        scenario = tmp_path / f"debate{seed}.yaml"
        scenario.write_text(f"protocol: debate\ngeneration: {{seed: {seed}}}\n", encoding="utf-8")
        assert main([str(scenario), *DEMOS["debate"][2:], "--model", "scripted", "--out", str(tmp_path / out),
                     "--quiet", "--no-cache"]) == 0
        return decisions(tmp_path / out)

    first = run(0, "a")
    assert run(0, "b") == first and run(5, "c") != first
