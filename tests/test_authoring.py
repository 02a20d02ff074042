"""Writing scenarios: `schema`, docs/scenarios.md and `new`, all derived from the protocol registry,
and the committed docs kept equal to what they derive."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from moot.scenario.bundled import bundled_dir
from moot.cli import main
from moot.api.authoring import SCHEMA_LINE, retitle, scenario_text
from moot.api.schema import DRAFT, docs_text, scenario_schema
from moot.engine.unparsed import EXIT_UNPARSED
from moot.protocols.registry import REGISTRY
from moot.engine.folder import read_results
from moot.saved.files import transcript_of
from moot.saved.records import ResultRow
from moot.scenario.load import load_scenario
from moot.scenario.keys import Walk, keys
from moot.log.transcript import load

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
PROTOCOLS = REGISTRY.all()
NAMES = [p.name for p in PROTOCOLS]
REGENERATE = "run `moot schema --out docs/scenario.schema.json` and `moot schema --docs --out docs/scenarios.md`"


# ---------------------------------------------------------------- schema

def test_committed_schema_is_the_generated_schema(capsys):
    committed = json.loads((ROOT / "docs" / "scenario.schema.json").read_text(encoding="utf-8"))
    assert committed == scenario_schema(), f"docs/scenario.schema.json is stale: {REGENERATE}"
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == committed
    assert committed["$schema"] == DRAFT == "https://json-schema.org/draft/2020-12/schema"
    branches = [committed["$defs"][ref["$ref"].rsplit("/", 1)[-1]] for ref in committed["oneOf"]]
    assert [b["properties"]["protocol"]["const"] for b in branches] == NAMES
    assert all(b["additionalProperties"] is False for b in branches)
    assert all(name in committed["description"] for name in NAMES)


def test_every_bundled_scenario_matches_the_committed_schema():
    schema = json.loads((ROOT / "docs" / "scenario.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert {load_scenario(p).protocol for p in SCENARIOS} == set(NAMES), "a protocol without a bundled scenario"
    for path in SCENARIOS:
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8")))]
        assert errors == [], f"{path.name}: {errors}"
    for bad in ({"protocol": "cola", "colour": "red"}, {"protocol": "s2mad", "rounds": 99},
                {"protocol": "negotiation", "max_turns": 0}, {"protocol": "colla"}, {"title": "no task or topics"}):
        assert not validator.is_valid(bad), bad


def test_bundled_scenarios_name_the_schema():
    for path in SCENARIOS:
        assert path.read_text().splitlines()[0] == f"{SCHEMA_LINE}../docs/scenario.schema.json"


def test_key_docstrings_are_read_as_pydantic_reads_them():
    """The docstring under a key, a base's keys included, a model's own first; explicit descriptions
    stay; the JSON Schema carries them (moot.scenario.keydocs: pydantic no longer reads them at
    start-up)."""
    from pydantic import BaseModel, ConfigDict, Field

    from moot.scenario.keydocs import key_docstrings

    class Base(BaseModel):
        a: int = 1
        """The first key:
            indented on."""
        b: int = 2
        """Base's b."""

    class Child(Base):
        b: int = 3
        """Child's b."""
        c: int = Field(default=4, description="explicit")
        d: int = 5

    docs = key_docstrings(Child)
    assert docs == {"a": "The first key:\nindented on.", "b": "Child's b."}

    class Documented(BaseModel):  # what pydantic itself reads, for comparison
        model_config = ConfigDict(use_attribute_docstrings=True)
        a: int = 1
        """The first key:
            indented on."""

    assert key_docstrings(Documented)["a"] == Documented.model_fields["a"].description
    schema = scenario_schema()
    assert schema["$defs"]["Generation"]["properties"]["temperature"]["description"] == "Sampling temperature."


# ---------------------------------------------------------------- docs/scenarios.md

def test_committed_docs_are_the_generated_docs(capsys):
    committed = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    assert committed == docs_text(), f"docs/scenarios.md is stale: {REGENERATE}"
    assert main(["schema", "--docs"]) == 0
    assert capsys.readouterr().out == committed


def schema_paths(schema: dict, definition: str) -> set[str]:
    """Every key path of one definition of the JSON Schema: `generation.seed`, `participants[].name`."""

    def resolve(node: dict) -> dict:
        while "$ref" in node or "anyOf" in node:
            if "$ref" in node:
                node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
            else:
                node = next((n for n in node["anyOf"] if n.get("type") == "object" or "$ref" in n), node["anyOf"][0])
        return node

    def walk(node: dict, prefix: str):
        node = resolve(node)
        if node.get("type") == "array":
            yield from walk(node["items"], prefix + "[]")
        if isinstance(node.get("additionalProperties"), dict):
            yield from walk(node["additionalProperties"], prefix + ".<key>")
        for key, child in node.get("properties", {}).items():
            path = f"{prefix}.{key}" if prefix else key
            yield path
            yield from walk(child, path)

    return set(walk(schema["$defs"][definition], ""))


def doc_rows(section: str) -> set[str]:
    return set(re.findall(r"^\| `([^`]+)` \|", section, re.M))


def doc_sections() -> dict[str, str]:
    """docs/scenarios.md by `## ` section: the protocol a section declares, or its title."""
    sections = {}
    for part in re.split(r"^## ", (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8"), flags=re.M)[1:]:
        named = re.search(r"`protocol: (\w+)`", part.splitlines()[0])
        sections[named.group(1) if named else part.splitlines()[0]] = part
    return sections


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=NAMES)
def test_docs_describe_every_key_of_the_json_schema_and_no_other(protocol):
    """The docs walk the pydantic models; the JSON Schema is pydantic's own view of them."""
    sections = doc_sections()
    documented = doc_rows(sections[protocol.name]) | doc_rows(sections["Shared blocks"])
    placeholders = dict(re.findall(r"^`(<\w+>)` stands for any of (.*)\.$", sections[protocol.name], re.M))
    for placeholder, where in placeholders.items():
        for row in [r for r in documented if r.startswith(placeholder)]:
            documented |= {path + row[len(placeholder):] for path in re.findall(r"`([^`]+)`", where)}
    documented = {row for row in documented if not row.startswith("<")}
    assert documented == schema_paths(scenario_schema(), protocol.scenario.__name__)


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=NAMES)
def test_every_key_has_a_meaning(protocol):
    """Each key's docstring (else its block's) is its meaning; the docs add the contract's keys."""
    undocumented = [row.path for row in keys(protocol.scenario, Walk({}))
                    if not row.meaning and row.path not in ("protocol", "prompts") and not row.path.startswith("input.")]
    assert undocumented == [], "give these keys a docstring in their scenario model"
    rows = [line for line in doc_sections()[protocol.name].splitlines() if line.startswith("| `")]
    assert rows and [line for line in rows if line.endswith("|  |")] == []


def test_docs_show_each_protocol_s_bundled_example():
    sections = doc_sections()
    for protocol in PROTOCOLS:
        example = (bundled_dir() / f"{protocol.example}.yaml").read_text(encoding="utf-8")
        body = "".join(line for line in example.splitlines(keepends=True) if not line.startswith(SCHEMA_LINE))
        assert f"```yaml\n{body}```" in sections[protocol.name]
        assert protocol.paper in sections[protocol.name]
        assert all(f"`{field.name}`" in sections[protocol.name] for field in protocol.inputs)


# ---------------------------------------------------------------- new

@pytest.mark.parametrize("protocol", PROTOCOLS, ids=NAMES)
def test_new_writes_the_example_under_a_new_title_and_it_runs(protocol, tmp_path, capsys):
    assert main(["new", "--protocol", protocol.name, "my-study", "--dir", str(tmp_path / "sc")]) == 0
    path = tmp_path / "sc" / "my-study.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.startswith(SCHEMA_LINE)
    example = (bundled_dir() / f"{protocol.example}.yaml").read_text(encoding="utf-8")
    kept = [line for line in example.splitlines() if not line.startswith((SCHEMA_LINE, "title:"))]
    assert [line for line in text.splitlines() if not line.startswith((SCHEMA_LINE, "title:"))] == kept
    assert sum(line.startswith("# ") for line in kept) >= 3, "the example explains itself in comments"
    scenario = load_scenario(path)
    assert scenario.protocol == protocol.name and scenario.title == "My study"
    assert main(["validate", str(path)]) == 0
    capsys.readouterr()
    out = tmp_path / "run"
    code = main(["run", str(path), "--model", "scripted", "--out", str(out), "--quiet"])
    [row] = read_results(out).values()
    assert row["status"] == "completed"
    # The scripted model gives no label to most examples: a run whose every answer is unparsed exits 4.
    assert code == (EXIT_UNPARSED if row["prediction"] == "unparsed" else 0)
    assert load(transcript_of(out, ResultRow.model_validate(row))).started.protocol == protocol.name
    assert main(["new", "--protocol", protocol.name, "my-study", "--dir", str(tmp_path / "sc")]) == 2
    assert "exists" in capsys.readouterr().err  # never overwrites


def test_new_offers_every_registered_protocol(capsys):
    with pytest.raises(SystemExit):
        main(["new", "--help"])
    assert " ".join(f"the protocol: {', '.join(NAMES)} (default".split()) in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit) as exited:
        main(["new", "--protocol", "colla", "x"])
    assert exited.value.code == 2 and "invalid choice: 'colla'" in capsys.readouterr().err


def test_new_points_at_the_committed_schema(tmp_path):
    protocol = REGISTRY.get("conference")
    inside = scenario_text(protocol, "x", ROOT / "scenarios" / "x.yaml").splitlines()[0]
    assert inside == f"{SCHEMA_LINE}../docs/scenario.schema.json"
    elsewhere = scenario_text(protocol, "x", tmp_path / "x.yaml").splitlines()[0]
    assert elsewhere == f"{SCHEMA_LINE}{(ROOT / 'docs' / 'scenario.schema.json').as_uri()}"


@pytest.mark.parametrize("text, expected", [
    ("protocol: x\ntitle: old  # kept\ntask: y\n", 'protocol: x\ntitle: "T"  # kept\ntask: y\n'),
    ("protocol: x\ntitle: >-\n  a long\n  title\ntask: y\n", 'protocol: x\ntitle: "T"\ntask: y\n'),
    ("protocol: x\ntitle: 'a\n  b'\n", "protocol: x\ntitle: \"T\"\n"),
    ("# c\nprotocol: x\n", '# c\ntitle: "T"\nprotocol: x\n'),
])
def test_retitle_keeps_everything_but_the_title(text, expected):
    assert retitle(text, '"T"') == expected


@pytest.mark.parametrize("stem", ["../up", ".hidden", "a/b"])
def test_new_refuses_a_path_as_file_stem(stem, tmp_path, capsys):
    assert main(["new", stem, "--dir", str(tmp_path)]) == 2
    assert "plain file name" in capsys.readouterr().err
