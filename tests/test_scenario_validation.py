"""Scenario validation: every problem is ONE line `file:line: key.path: message`, the CLI exits 2
and nothing is written (no --out file, no transcripts/ directory)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from moot.cli import EXIT_USAGE, main
from moot.protocols.registry import REGISTRY
from moot.scenario.load import ScenarioError, load_scenario

BASE = """\
title: Test conference
task: Decide something.
topics:
  - first topic
  - second topic
moderator:
  name: Moderator
participants:
  - name: Alice
    persona: An economist.
  - name: Bob
judge:
  name: Judge
evaluator:
  name: Evaluator
models:
  default: scripted
limits:
  max_rounds_per_topic: 2
"""
# line numbers of BASE: 1 title, 3 topics, 6 moderator, 8 participants, 9 Alice, 11 Bob, 12 judge,
# 14 evaluator, 16 models, 17 default, 18 limits, 19 max_rounds_per_topic


def edit(*pairs: tuple[str, str]) -> str:
    text = BASE
    for old, new in pairs:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


CASES = [
    # (id, scenario text, line, key path, message start)
    ("unknown top-level key", edit(("task: Decide something.\n", "task: Decide something.\ncolour: red\n")),
     3, "colour", "unknown key (allowed: protocol, title, task, topics,"),
    ("unknown nested key", edit(("  - name: Bob\n", "  - nme: Bob\n")),
     11, "participants[1].nme", "unknown key (did you mean 'name'?)"),
    ("unknown key beside a good one", edit(("    persona: An economist.\n", "    persona: An economist.\n    mood: calm\n")),
     11, "participants[0].mood", "unknown key"),
    ("unknown key two levels down", edit(("  name: Moderator\n", "  name: Moderator\n  generation:\n    temprature: 1\n")),
     9, "moderator.generation.temprature", "unknown key (did you mean 'temperature'?)"),
    ("wrong type", edit(("max_rounds_per_topic: 2", 'max_rounds_per_topic: "three"')),
     19, "limits.max_rounds_per_topic", "Input should be a valid integer"),
    ("out of range", edit(("max_rounds_per_topic: 2", "max_rounds_per_topic: 0")),
     19, "limits.max_rounds_per_topic", "Input should be greater than or equal to 1"),
    ("topics not a list", edit(("topics:\n  - first topic\n  - second topic\n", "topics: first topic\n")),
     3, "topics", "Input should be a valid list"),
    ("unknown agent in models", edit(("  default: scripted\n", "  default: scripted\n  Carol: scripted\n")),
     18, "models.Carol", "unknown agent or role (allowed: default, moderator, participants, judge, evaluator,"),
    ("one participant", edit(("  - name: Bob\n", "")),
     8, "participants", "at least 2 participants are required"),
    ("empty topics", edit(("topics:\n  - first topic\n  - second topic\n", "topics: []\n")),
     3, "topics", "at least 1 topic is required"),
    ("empty topic text", edit(("  - second topic\n", "  - ''\n")),
     5, "topics[1]", "String should have at least 1 character"),
    ("duplicate participant names", edit(("  - name: Bob\n", "  - name: Alice\n")),
     11, "participants[1].name", "duplicate agent name 'Alice' (also used by participants[0])"),
    ("judge named like a participant", edit(("  name: Judge\n", "  name: Bob\n")),
     13, "judge.name", "duplicate agent name 'Bob' (also used by participants[1])"),
    ("reserved name", edit(("  - name: Bob\n", "  - name: user\n")),
     11, "participants[1].name", "'user' is reserved"),
    ("bad agent name", edit(("  - name: Bob\n", "  - name: 2 Bob\n")),
     11, "participants[1].name", "must start with a letter and contain only letters, digits and _"),
    ("duplicate YAML key", edit(("task: Decide something.\n", "task: Decide something.\ntask: Again.\n")),
     3, "task", "duplicate key"),
    ("duplicate nested YAML key", edit(("  name: Judge\n", "  name: Judge\n  name: Judge2\n")),
     14, "judge.name", "duplicate key"),
    ("agreement by judge without judge", edit(("judge:\n  name: Judge\n", "")),
     1, "routing.agreement", "is 'judge' but no judge is declared"),
    ("agreement by moderator with judge", BASE + "routing:\n  agreement: moderator\n",
     21, "routing.agreement", "is 'moderator' (without-judge variant) but a judge is declared"),
    ("bad routing value", BASE + "routing:\n  on_more_debate: judge\n",
     21, "routing.on_more_debate", "Input should be 'moderator' or 'participants'"),
    ("unknown provider", edit(("default: scripted", "default: gpt4")),
     17, "models.default", "unknown model provider 'gpt4'"),
    ("provider without model", edit(("default: scripted", "default: openai")),
     17, "models.default", "'openai' needs a model name"),
    ("bad agent model spec", edit(("  - name: Bob\n", "  - name: Bob\n    model: nope:x\n")),
     12, "participants[1].model", "unknown model provider 'nope'"),
    ("bad scripted token", edit(("default: scripted", "default: scripted:MAYBE")),
     17, "models.default", "unknown scripted token 'MAYBE'"),
    ("unknown prompt placeholder", BASE + "prompts:\n  participant_turn: Speak about $topik now.\n",
     21, "prompts.participant_turn", "unknown placeholder $topik (did you mean '$topic'?)"),
    ("unknown placeholder in agent prompt", edit(("  - name: Bob\n", "  - name: Bob\n    prompt: I am ${nam}.\n")),
     12, "participants[1].prompt", "unknown placeholder $nam"),
    ("malformed placeholder", edit(("  name: Moderator\n", "  name: Moderator\n  prompt: costs $ 5\n")),
     8, "moderator.prompt", "malformed $placeholder"),
    ("unknown prompt key", BASE + "prompts:\n  participant_speech: hi\n",
     21, "prompts.participant_speech", "unknown prompt (did you mean 'participant_system'?)"),
    ("unknown prompt key, nothing near", BASE + "prompts:\n  opening_speech: hi\n",
     21, "prompts.opening_speech", "unknown prompt (allowed: assessor_item_turn, assessor_quote_turn, assessor_system,"),
    ("value near an allowed one", BASE + "routing:\n  agreement: jduge\n",
     21, "routing.agreement", "Input should be 'judge' or 'moderator' (did you mean 'judge'?)"),
    ("misspelt required key: the misspelling only", edit(("title: Test conference", "titel: Test conference")),
     1, "titel", "unknown key (did you mean 'title'?)"),
    ("missing required key", edit(("title: Test conference\n", "")),
     1, "title", "required key is missing"),
]


def run_cli(tmp_path, monkeypatch, capsys, *argv: str) -> str:
    """Run the CLI in tmp_path; assert exit 2 and nothing written; return the one error line."""
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.iterdir())
    code = main([*argv, "--out", "out.jsonl"])
    captured = capsys.readouterr()
    assert code == EXIT_USAGE, captured
    assert captured.out == ""
    assert not (tmp_path / "out.jsonl").exists()
    assert not (tmp_path / "transcripts").exists()
    assert set(tmp_path.iterdir()) == before
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("error: ")
    return lines[0].removeprefix("error: ")


@pytest.mark.parametrize("text, line, key, message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_invalid_scenario_is_one_line_and_nothing_is_written(tmp_path, monkeypatch, capsys, text, line, key, message):
    (tmp_path / "bad.yaml").write_text(text, encoding="utf-8")
    error = run_cli(tmp_path, monkeypatch, capsys, "bad.yaml")
    prefix = f"bad.yaml:{line}: {key}: "
    assert error.startswith(prefix + message), error
    assert "\n" not in error


def test_first_of_several_problems_is_reported_with_count(tmp_path):
    (tmp_path / "bad.yaml").write_text(edit(("max_rounds_per_topic: 2", "max_rounds_per_topic: x\n  foo: 1")))
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path / "bad.yaml")
    assert str(info.value).endswith("(got 2 problems; fix this one first)")
    assert info.value.line == 20 and info.value.key == ("limits", "foo")


def test_invalid_yaml_syntax_names_file_and_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "bad.yaml").write_text(edit(("  - name: Bob\n", "  - name: [Bob\n")))
    error = run_cli(tmp_path, monkeypatch, capsys, "bad.yaml")
    assert error.startswith("bad.yaml:12: invalid YAML: "), error


@pytest.mark.parametrize("text, message", [
    ("- a\n- list\n", "bad.yaml:1: a scenario must be a mapping of keys"),
    ("", "bad.yaml: a scenario must be a mapping of keys"),
])
def test_not_a_mapping(tmp_path, monkeypatch, capsys, text, message):
    (tmp_path / "bad.yaml").write_text(text)
    assert run_cli(tmp_path, monkeypatch, capsys, "bad.yaml") == message


def test_missing_file(tmp_path, monkeypatch, capsys):
    assert run_cli(tmp_path, monkeypatch, capsys, "nowhere.yaml") == "nowhere.yaml: file not found"


@pytest.mark.parametrize("override, message", [
    ("refere=scripted", "--model refere=scripted: unknown role or agent 'refere'"),
    ("Carol=scripted", "--model Carol=scripted: unknown role or agent 'Carol'"),
    ("bogus", "--model bogus: unknown model provider 'bogus'"),
    ("Alice=openai", "--model Alice=openai: 'openai' needs a model name"),
    ("judge=scripted:SOON", "--model judge=scripted:SOON: unknown scripted token 'SOON'"),
])
def test_bad_model_override(tmp_path, monkeypatch, capsys, override, message):
    (tmp_path / "good.yaml").write_text(BASE)
    error = run_cli(tmp_path, monkeypatch, capsys, "good.yaml", "--model", override)
    assert error.startswith(message), error


def test_an_out_that_is_a_file_is_refused_and_kept(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.yaml").write_text(BASE)
    (tmp_path / "out.jsonl").write_text("keep me\n")
    assert main(["good.yaml", "--out", "out.jsonl"]) == EXIT_USAGE
    assert capsys.readouterr().err == ("error: out.jsonl: exists and is not a folder (--out names a run folder); "
                                       "choose another --out\n")
    assert (tmp_path / "out.jsonl").read_text() == "keep me\n"


def test_valid_base_scenario_runs(tmp_path, monkeypatch, capsys):
    """The base of every case above is itself valid, so each case fails for its own reason."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.yaml").write_text(BASE)
    assert main(["good.yaml", "--out", "out.jsonl", "--quiet"]) == 0
    assert (tmp_path / "out.jsonl").exists()
    scenario = load_scenario(tmp_path / "good.yaml")
    assert [p.name for p in scenario.participants] == ["Alice", "Bob"]
    assert scenario.limits.max_rounds_per_topic == 2


@pytest.mark.parametrize("path", ["scenarios/drug_policy.yaml", "scenarios/drug_policy_no_judge.yaml"])
def test_shipped_scenarios_are_valid(path):
    scenario = load_scenario(Path(__file__).resolve().parents[1] / path)
    assert len(scenario.topics) == 3 and len(scenario.participants) == 2


# ---------------------------------------------------------------- validate

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
DATASETS = sorted((ROOT / "datasets").glob("*.yaml"))


def validate(tmp_path, capsys, *texts: str) -> tuple[int, list[str], list[Path]]:
    """`moot validate` on files with these texts: exit code, printed lines, the files."""
    paths = []
    for number, text in enumerate(texts):
        paths.append(tmp_path / f"f{number}.yaml")
        paths[-1].write_text(text, encoding="utf-8")
    code = main(["validate", *map(str, paths)])
    return code, capsys.readouterr().out.splitlines(), paths


def data_of(spec: Path) -> Path:
    return (spec.parent / yaml.safe_load(spec.read_text())["path"]).resolve()


def missing_line(spec: Path) -> str:
    """What `validate` says of a spec whose data file is absent: its path, and where the data is
    published when the spec says (`source:`)."""
    source = yaml.safe_load(spec.read_text()).get("source")
    return f"{spec}: path: file not found: {data_of(spec)}" + (f" (published at {source})" if source else "")


def test_validate_accepts_every_bundled_scenario_and_dataset_spec(capsys):
    """Dataset specs of data moot does not ship name files under the repository's data/; without
    them (a bare clone) a spec is valid but for its file, one line each, naming where it is published."""
    assert SCENARIOS and DATASETS
    code = main(["validate", *map(str, SCENARIOS + DATASETS)])
    absent = [p for p in DATASETS if not data_of(p).is_file()]
    assert code == (2 if absent else 0)
    assert capsys.readouterr().out.splitlines() == [
        f"ok: {p}" if p not in absent else missing_line(p) for p in SCENARIOS + DATASETS]


def test_unknown_protocol_is_one_line_with_the_nearest(tmp_path, capsys):
    code, lines, [path] = validate(tmp_path, capsys, "protocol: colla\ntitle: t\nlabels: [x]\ncolour: red\n")
    assert code == 2
    assert lines == [f"{path}:1: protocol: unknown protocol 'colla' (did you mean 'cola'?) "
                     f"(allowed: {', '.join(REGISTRY.names())})"]
    assert REGISTRY.names()[:5] == ["conference", "cola", "s2mad", "negotiation", "debate"]


@pytest.mark.parametrize("text, expected", [
    ("protocol: cola\ntitle: t\nlabels: [favor, favor]\n", ["3: labels: labels must be distinct"]),
    ("protocol: cola\nexperts: [linguist, socal]\ncolour: red\n",
     ["2: experts[1]: Input should be 'linguist', 'domain' or 'social' (did you mean 'social'?)",
      "3: colour: unknown key (allowed: protocol, title, input, labels, options,"]),
    ("protocol: s2mad\nrounds: 99\n", ["2: rounds: Input should be less than or equal to 20"]),
    ("protocol: s2mad\nmodels: {debater: local}\n", ["2: models.debater: unknown role (did you mean 'debater_p'?)"]),
    ("protocol: cola\nmodels: {judgr: local}\n", ["2: models.judgr: unknown role (did you mean 'judger'?)"]),
    ("protocol: cola\nprompts: {judger: $labls}\n", ["2: prompts.judger: unknown placeholder $labls (did you mean"]),
    ("protocol: negotiation\nmodels: {first: local}\n",
     ["2: models: models.second is required (the negotiation needs two LLMs)"]),
    ("protocol: negotiation\nmodels: {first: local, second: local}\n",
     ["2: models: the LLMs must be different model specs"]),
    ("protocol: negotiation\nmax_trns: 3\n", ["2: max_trns: unknown key (did you mean 'max_turns'?)"]),
])
def test_validate_reports_problems_of_every_protocol(tmp_path, capsys, text, expected):
    code, lines, [path] = validate(tmp_path, capsys, text)
    assert code == 2 and len(lines) == len(expected), lines
    for line, start in zip(lines, expected):
        assert line.startswith(f"{path}:{start}"), line


def test_validate_reports_every_field_problem_once(tmp_path, capsys):
    code, lines, [bad, good] = validate(tmp_path, capsys, """\
titel: x
task: [a, list]
topics: []
moderator:
  name: 1bad
participants:
  - name: A
generation:
  temperature: 5
routing:
  agreement: maybe
""", BASE)
    assert code == 2
    assert lines == [
        f"{bad}:1: titel: unknown key (did you mean 'title'?)",  # and not also "title: missing"
        f"{bad}:2: task: Input should be a valid string",
        f"{bad}:3: topics: at least 1 topic is required",
        f"{bad}:5: moderator.name: must start with a letter and contain only letters, digits and _",
        f"{bad}:6: participants: at least 2 participants are required",
        f"{bad}:9: generation.temperature: Input should be less than or equal to 2",
        f"{bad}:11: routing.agreement: Input should be 'judge' or 'moderator'",
        f"ok: {good}",
    ]


def test_validate_reports_every_cross_field_problem(tmp_path, capsys):
    code, lines, [bad] = validate(tmp_path, capsys, """\
title: x
task: y
topics: [a]
moderator: {name: M}
participants: [{name: A}, {name: A}]
models: {judg: local}
prompts: {participant_turn: "$nope"}
""")
    assert code == 2
    assert f"{bad}:5: participants[1].name: duplicate agent name 'A' (also used by participants[0])" in lines
    assert f"{bad}:1: routing.agreement: is 'judge' but no judge is declared (declare one, or use 'moderator')" in lines
    assert f"{bad}:6: models.judg: unknown agent or role (did you mean 'judge'?)" in lines
    assert any(line.startswith(f"{bad}:7: prompts.participant_turn: unknown placeholder $nope (allowed: $agenda, $all,")
               for line in lines)
    assert len(lines) == 4


@pytest.mark.parametrize("text, expected", [
    ("path: data.csv\nformat: cvs\ncolumns: {text: t}\n",
     "2: format: Input should be 'csv', 'tsv', 'jsonl' or 'lines' (got 'cvs') (did you mean 'csv'?)"),
    ("path: data.csv\ncolumns: {txt: t}\n", "2: columns.txt: unknown key (did you mean 'text'?)"),
    ("pth: data.csv\ncolumns: {text: t}\n", "1: pth: unknown key (did you mean 'path'?)"),
    ("path: missing.csv\ncolumns: {text: t}\n", ": path: file not found: "),
    ("path: data.csv\ncolumns: {text: t}\nlabels: {yes: favor}\n",
     "3: labels.true: YAML read an unquoted true/false/yes/no as a boolean; quote it"),
])
def test_validate_checks_a_dataset_spec_as_one(tmp_path, capsys, text, expected):
    (tmp_path / "data.csv").write_text("t,label\nhello,favor\n", encoding="utf-8")
    code, lines, [path] = validate(tmp_path, capsys, text)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"{path}{expected}" if expected.startswith(":") else f"{path}:{expected}"), lines[0]
    assert "title" not in lines[0] and "topics" not in lines[0], "checked as a conference"


def test_validate_unreadable_files(tmp_path, capsys):
    broken = tmp_path / "broken.yaml"
    broken.write_text("title: [unclosed\ntask: x\n")
    assert main(["validate", str(broken), str(tmp_path / "missing.yaml")]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{broken}:") and "invalid YAML" in lines[0]
    assert lines[1] == f"{tmp_path / 'missing.yaml'}: file not found"


def test_every_placeholder_of_the_shipped_conference_templates_is_allowed_in_an_override():
    """A scenario that overrides a shipped template with its own placeholders must validate."""
    from string import Template

    from moot.agents.prompts import PROMPT_FIELDS, default_templates

    used = {name for text in default_templates("conference").values()
            for name in Template(text).get_identifiers()}
    assert used <= PROMPT_FIELDS, sorted(used - PROMPT_FIELDS)
