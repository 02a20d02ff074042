"""Writing scenarios: `validate`, `new`, `schema`, and docs/scenarios.md kept in step with the schema."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from moot.cli import main
from moot.commands.new import scenario_text
from moot.commands.schema import DRAFT, protocol_models, scenario_schema
from moot.scenario import load_scenario
from moot.transcript import load

ROOT = Path(__file__).resolve().parents[1]
CONFERENCE_SCENARIOS = sorted((ROOT / "scenarios").glob("drug_policy*.yaml"))
ALL_SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
PROTOCOLS = ("conference", "cola", "s2mad", "negotiation")
SHARED_BLOCKS = ("generation.", "retry.", "backends.")  # documented once, under "Shared blocks"
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


def test_validate_accepts_every_shipped_scenario(capsys):
    assert {load_scenario(p).protocol for p in ALL_SCENARIOS} == set(PROTOCOLS)
    assert main(["validate", *map(str, ALL_SCENARIOS)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"ok: {p}" for p in ALL_SCENARIOS]


@pytest.mark.parametrize("text, expected", [
    ("protocol: cola\ntitle: t\nlabels: [favor, favor]\n", ["3: labels: labels must be distinct"]),
    ("protocol: cola\nexperts: [linguist, poet]\ncolour: red\n",
     ["2: experts[1]: Input should be 'linguist', 'domain' or 'social'",
      "3: colour: unknown key (allowed: protocol, title, input, labels, options,"]),
    ("protocol: s2mad\nrounds: 99\n", ["2: rounds: Input should be less than or equal to 20"]),
    ("protocol: s2mad\nmodels: {debater: local}\n", ["2: models.debater: unknown role (allowed: default, scorer,"]),
    ("protocol: negotiation\nmodels: {first: local}\n",
     ["2: models: models.second is required (the negotiation needs two LLMs)"]),
    ("protocol: negotiation\nmodels: {first: local, second: local}\nprompts: {generator: '$nope'}\n",
     ["2: models: the LLMs must be different model specs"]),
])
def test_validate_reports_problems_of_every_protocol(tmp_path, capsys, text, expected):
    bad = write(tmp_path, text)
    assert main(["validate", str(bad)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(expected)
    for line, start in zip(lines, expected):
        assert line.startswith(f"{bad}:{start}"), line


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
def test_new_item_protocol_scenario_validates_and_runs_its_inline_item(protocol, tmp_path, capsys):
    assert main(["new", "--protocol", protocol, "my_item", "--dir", str(tmp_path)]) == 0
    path = tmp_path / "my_item.yaml"
    text = path.read_text()
    assert text.startswith("# yaml-language-server: $schema=") and f"\nprotocol: {protocol}\n" in text
    assert main(["validate", str(path)]) == 0
    scenario = load_scenario(path)
    assert scenario.protocol == protocol and scenario.title == "My item"
    assert any(scenario.input.model_dump().values()), "the item of a single run is in the file"
    out = tmp_path / "item.jsonl"
    capsys.readouterr()
    assert main([str(path), "--model", "scripted", "--out", str(out), "--no-cache", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert f"transcript: {out}" in printed and "backend_calls=" in printed
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert events[0]["type"] == "item_started" and events[-1]["type"] == "item_finished"
    assert any(e["type"] == "call" for e in events)
    assert main(["new", "--protocol", protocol, "my_item", "--dir", str(tmp_path)]) == 2  # never overwrites


# ---------------------------------------------------------------- schema

def test_committed_schema_is_generated_schema(capsys):
    committed = json.loads((ROOT / "docs" / "scenario.schema.json").read_text(encoding="utf-8"))
    assert committed == scenario_schema(), \
        "docs/scenario.schema.json is stale: run `python run_conference.py schema --out docs/scenario.schema.json`"
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == committed
    assert printed["$schema"] == DRAFT == "https://json-schema.org/draft/2020-12/schema"
    assert printed["title"] and printed["description"]
    branches = [printed["$defs"][ref["$ref"].rsplit("/", 1)[-1]] for ref in printed["oneOf"]]
    assert [b["properties"]["protocol"].get("const", b["properties"]["protocol"].get("enum", [None])[0])
            for b in branches] == list(PROTOCOLS)
    assert all(b["additionalProperties"] is False for b in branches)


def test_every_shipped_scenario_matches_the_committed_schema():
    schema = json.loads((ROOT / "docs" / "scenario.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in ALL_SCENARIOS:
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8")))]
        assert errors == [], f"{path.name}: {errors}"
    for bad in ({"protocol": "cola", "colour": "red"}, {"protocol": "s2mad", "rounds": 99},
                {"protocol": "negotiation", "max_turns": 0}, {"protocol": "debate"}, {"title": "no task or topics"}):
        assert not validator.is_valid(bad), bad


def test_shipped_scenarios_name_the_schema():
    for path in ALL_SCENARIOS:
        assert path.read_text().splitlines()[0] == "# yaml-language-server: $schema=../docs/scenario.schema.json"


# ---------------------------------------------------------------- docs/scenarios.md

def schema_paths(schema: dict, protocol: str = "conference") -> list[str]:
    """Every key path of one protocol's branch: `generation.seed`, `participants[].name`, ..."""

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

    return list(walk(schema["$defs"][protocol_models()[protocol].__name__], ""))


def documented(path: str) -> str:
    """How docs/scenarios.md names a path: agent keys once, as `<agent>.KEY`."""
    for agent in AGENT_KEYS:
        if path.startswith(agent + "."):
            return "<agent>" + path[len(agent):]
    return path


def doc_sections() -> dict[str, str]:
    """docs/scenarios.md by `## ` section: the protocol a section declares, or its title."""
    text = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    sections = {}
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        title = part.splitlines()[0]
        named = re.search(r"`protocol: (\w+)`", title)
        sections[named.group(1) if named else title] = part
    return sections


def rows(section: str) -> set[str]:
    return set(re.findall(r"^\| `([^`]+)` \|", section, re.M))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_docs_describe_every_key_and_no_other(protocol):
    sections = doc_sections()
    paths = {documented(p) for p in schema_paths(scenario_schema(), protocol)}
    assert len(paths) > (30 if protocol == "conference" else 15)
    shared = rows(sections["Shared blocks"])
    assert shared and all(p.startswith(SHARED_BLOCKS) for p in shared) and shared <= paths
    own = rows(sections[protocol])
    assert sorted(paths - own - shared) == [], f"keys of {protocol} missing from docs/scenarios.md tables"
    assert sorted(own - paths) == [], f"docs/scenarios.md documents keys {protocol} does not have"
    assert not any(p.startswith(SHARED_BLOCKS) for p in own), "shared blocks are documented once"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_docs_example_of_every_protocol_is_valid(protocol, tmp_path):
    section = doc_sections()[protocol]
    examples = [b for b in re.findall(r"```yaml\n(.*?)```", section, re.S) if "protocol:" in b]
    assert examples, f"no example for {protocol}"
    assert load_scenario(write(tmp_path, examples[0])).protocol == protocol


def test_docs_example_is_a_valid_scenario(tmp_path):
    text = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    example = next(block for block in re.findall(r"```yaml\n(.*?)```", text, re.S) if "protocol:" in block)
    scenario = load_scenario(write(tmp_path, example))
    assert scenario.participants[1].generation.temperature == 0.9


def test_bare_model_plays_every_negotiation_llm(tmp_path, capsys):
    same = write(tmp_path, "protocol: negotiation\nmodels: {first: local, second: local}\n"
                           "allow_same_model: true\ninput: {text: fine}\n", "same.yaml")
    assert main([str(same), "--model", "scripted", "--out", str(tmp_path / "t.jsonl"), "--no-cache", "--quiet"]) == 0
    models = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])["models"]
    assert models["first"] == models["second"] == "scripted"
    distinct = write(tmp_path, "protocol: negotiation\nmodels: {first: local, second: ollama:x}\n"
                               "input: {text: fine}\n", "distinct.yaml")
    assert main([str(distinct), "--model", "scripted", "--no-cache", "--quiet"]) == 2
    assert capsys.readouterr().err.startswith("error: --model: models: the LLMs must be different model specs")
