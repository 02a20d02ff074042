"""Writing scenarios: `validate`, `new`, `schema`, and docs/scenarios.md kept in step with the schema."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from moot.cli import main
from moot.commands.new import scenario_text
from moot.commands.schema import DRAFT, scenario_schema
from moot.scenario import load_scenario
from moot.transcript import load

ROOT = Path(__file__).resolve().parents[1]
CONFERENCE_SCENARIOS = sorted((ROOT / "scenarios").glob("drug_policy*.yaml"))
AGENT_KEYS = ("moderator", "participants[]", "judge", "evaluator")


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- validate

def test_validate_accepts_shipped_scenarios(capsys):
    assert CONFERENCE_SCENARIOS
    assert main(["validate", *map(str, CONFERENCE_SCENARIOS)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"ok: {p}" for p in CONFERENCE_SCENARIOS]


def test_validate_reports_every_field_problem_with_line_key_and_allowed(tmp_path, capsys):
    bad = write(tmp_path, """\
titel: x
task: ""
topics: []
moderator:
  name: 1bad
participants:
  - name: A
generation:
  temperature: 5
routing:
  agreement: maybe
""")
    good = CONFERENCE_SCENARIOS[0]
    assert main(["validate", str(bad), str(good)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"ok: {good}"
    assert lines[:-1] == [
        f"{bad}:1: title: required key is missing",
        f"{bad}:1: titel: unknown key (allowed: protocol, title, task, topics, moderator, participants, judge, "
        "evaluator, models, generation, limits, retry, routing, backends, prompts)",
        f"{bad}:2: task: String should have at least 1 character",
        f"{bad}:3: topics: at least 1 topic is required",
        f"{bad}:5: moderator.name: must start with a letter and contain only letters, digits and _",
        f"{bad}:6: participants: at least 2 participants are required",
        f"{bad}:9: generation.temperature: Input should be less than or equal to 2",
        f"{bad}:11: routing.agreement: Input should be 'judge' or 'moderator'",
    ]


def test_validate_reports_every_cross_field_problem(tmp_path, capsys):
    bad = write(tmp_path, """\
title: x
task: y
topics: [a]
moderator: {name: M}
participants: [{name: A}, {name: A}]
models: {nobody: local}
prompts: {participant_turn: "$nope"}
""")
    assert main(["validate", str(bad)]) == 2
    out = capsys.readouterr().out
    assert f"{bad}:5: participants[1].name: duplicate agent name 'A'" in out
    assert "routing.agreement: is 'judge' but no judge is declared" in out
    assert f"{bad}:6: models.nobody: unknown agent or role (allowed: default," in out
    assert f"{bad}:7: prompts.participant_turn: unknown placeholder $nope (allowed: $criteria," in out
    assert len(out.splitlines()) == 4


def test_validate_unreadable_files(tmp_path, capsys):
    broken = write(tmp_path, "title: [unclosed\ntask: x\n")
    assert main(["validate", str(broken), str(tmp_path / "missing.yaml")]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{broken}:") and "invalid YAML" in lines[0]
    assert lines[1] == f"{tmp_path / 'missing.yaml'}: file not found"


# ---------------------------------------------------------------- new

def test_new_scenario_validates_and_runs(tmp_path, capsys):
    assert main(["new", "--protocol", "conference", "city_plan", "--dir", str(tmp_path / "sc")]) == 0
    path = tmp_path / "sc" / "city_plan.yaml"
    text = path.read_text()
    assert text.startswith("# yaml-language-server: $schema=") and "title: \"City plan\"" in text
    assert main(["validate", str(path)]) == 0
    out = tmp_path / "run.jsonl"
    assert main([str(path), "--model", "scripted", "--out", str(out), "--quiet"]) == 0
    finished = load(out).finished
    assert finished.status == "completed" and finished.stop_reason == "all topics closed"
    assert main(["new", "city_plan", "--dir", str(tmp_path / "sc")]) == 2  # never overwrites
    assert "exists" in capsys.readouterr().err


def test_new_scenario_in_repo_points_at_committed_schema(tmp_path):
    first = scenario_text("x", ROOT / "scenarios" / "x.yaml").splitlines()[0]
    assert first == "# yaml-language-server: $schema=../docs/scenario.schema.json"
    elsewhere = scenario_text("x", tmp_path / "x.yaml").splitlines()[0]
    assert elsewhere == f"# yaml-language-server: $schema={(ROOT / 'docs' / 'scenario.schema.json').as_uri()}"


@pytest.mark.parametrize("protocol", ["cola", "s2mad", "negotiation"])
def test_new_other_protocols_not_available_yet(protocol, tmp_path, capsys):
    assert main(["new", "--protocol", protocol, "x", "--dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"error: protocol {protocol} is not available yet"
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------- schema

def test_committed_schema_is_generated_schema(capsys):
    committed = json.loads((ROOT / "docs" / "scenario.schema.json").read_text(encoding="utf-8"))
    assert committed == scenario_schema(), \
        "docs/scenario.schema.json is stale: run `python run_conference.py schema --out docs/scenario.schema.json`"
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == committed
    assert printed["$schema"] == DRAFT == "https://json-schema.org/draft/2020-12/schema"
    assert printed["title"] and printed["description"] and printed["additionalProperties"] is False


def test_shipped_scenarios_name_the_schema():
    for path in CONFERENCE_SCENARIOS:
        assert path.read_text().splitlines()[0] == "# yaml-language-server: $schema=../docs/scenario.schema.json"


# ---------------------------------------------------------------- docs/scenarios.md

def schema_paths(schema: dict) -> list[str]:
    """Every key path of the schema: `generation.seed`, `participants[].name`, ..."""

    def resolve(node: dict) -> dict:
        while "$ref" in node or "anyOf" in node:
            if "$ref" in node:
                node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
            else:
                node = next(n for n in node["anyOf"] if n.get("type") != "null")
        return node

    def walk(node: dict, prefix: str):
        node = resolve(node)
        if node.get("type") == "array":
            yield from walk(node["items"], prefix + "[]")
        for key, child in node.get("properties", {}).items():
            path = f"{prefix}.{key}" if prefix else key
            yield path
            yield from walk(child, path)

    return list(walk(schema, ""))


def documented(path: str) -> str:
    """How docs/scenarios.md names a path: agent keys once, as `<agent>.KEY`."""
    for agent in AGENT_KEYS:
        if path.startswith(agent + "."):
            return "<agent>" + path[len(agent):]
    return path


def test_docs_describe_every_key_and_no_other():
    text = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    paths = {documented(p) for p in schema_paths(scenario_schema())}
    assert len(paths) > 30
    rows = set(re.findall(r"^\| `([^`]+)` \|", text, re.M))
    assert sorted(paths - rows) == [], "keys missing from docs/scenarios.md tables"
    assert sorted(rows - paths) == [], "docs/scenarios.md documents keys the schema does not have"


def test_docs_example_is_a_valid_scenario(tmp_path):
    text = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    example = next(block for block in re.findall(r"```yaml\n(.*?)```", text, re.S) if "protocol:" in block)
    scenario = load_scenario(write(tmp_path, example))
    assert scenario.participants[1].generation.temperature == 0.9
