"""The contract's hooks, by tables: units and inputs of a protocol the engine has never seen (a
pairwise preference protocol in ChatEval's shape, run end to end with no change to moot.data or
moot.engine), the keys `--vary` takes, the metric sets and per-unit measures protocols declare,
what pairs units across runs, the checks a protocol must pass to register, and that the shared
layers import no protocol's module."""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path
from typing import Literal

import pytest
from autogen_core.models import SystemMessage, UserMessage
from pydantic import BaseModel, create_model

from moot.cli import main
from moot.contract.commands import DatasetCommand
from moot.contract.metrics import LABELLED, CORRECT, Metrics, UnitRecord
from moot.contract.protocol import InputField, Outcome, Protocol, ProtocolError
from moot.contract.registry import Registry
from moot.contract.units import ITEMS, UnitKey, by_seed, scenario_runs, unit_key
from moot.saved.records import ResultRow, RunMeta
from moot.contract.vary import MODEL, SEED, Choice, VaryKey, set_path
from moot.data.spec import DatasetError, load_dataset_spec
from moot.kit._context import UnitContext
from moot.engine.plan import dataset_plan, parse_vary, variant_plan
from moot.errors import UsageError
from moot.protocols.items.metrics import RUMOUR
from moot.protocols.registry import REGISTRY
from moot.scenario.blocks import Backends, Generation, Retry, ScenarioBase
from moot.scenario.load import load_scenario

ROOT = Path(__file__).resolve().parents[1]
PAIRWISE = "pairwise_demo"
PREFERENCES = ("a", "b", "tie")


class PairwiseScenario(ScenarioBase):
    """A made-up protocol in ChatEval's shape: one referee prefers response A, B, or neither."""

    PROTOCOL = PAIRWISE
    protocol: Literal["pairwise_demo"]
    title: str = "pairwise"
    labels: list[str] = list(PREFERENCES)
    models: dict[str, str] = {"default": "scripted"}
    generation: Generation = Generation(temperature=0.0, max_tokens=64)
    retry: Retry = Retry()
    backends: Backends = Backends()

    def roles(self) -> list[str]:
        return ["referee"]

    def templates(self) -> dict[str, str]:
        return {}

    def label_set(self) -> list[str]:
        return list(self.labels)

    def headline_metric(self) -> str:
        return "accuracy"


Preference = create_model("Preference", label=(Literal[PREFERENCES], ...), explanation=(str, ""))


async def run_pairwise(s: PairwiseScenario, ctx: UnitContext) -> Outcome:
    question = "\n".join(f"{k}: {ctx.inputs[k]}" for k in ("question", "response_a", "response_b"))
    messages = [SystemMessage(content="You are a referee."), UserMessage(content=question, source="user")]
    reply = await ctx.call("referee", messages, Preference)
    label = json.loads(reply.text)["label"]
    return Outcome(label, "", reply.text, decided_by="referee")


PROTOCOL = Protocol(
    name=PAIRWISE, title="Pairwise preference (test)", paper="-", scenario=PairwiseScenario,
    policy=lambda spoken: None if spoken else "referee", run=run_pairwise,
    inputs=(InputField("question", "question"), InputField("response_a", "response_a"),
            InputField("response_b", "response_b")),
    result_name="preference", example=PAIRWISE,
)

ROWS = [  # id, question (with the label the scripted referee answers), gold as the data has it
    ("p1", "Which is kinder? SCRIPTED_LABEL=a", "A"),
    ("p2", "Which is clearer? SCRIPTED_LABEL=b", "A"),
    ("p3", "Which is shorter? SCRIPTED_LABEL=tie", "tie"),
]
SPEC = ("path: pairs.jsonl\nformat: jsonl\n"
        "columns: {id: id, question: q, response_a: first, response_b: second, label: human}\n"
        'labels: {"A": a, "B": b, "tie": tie}\n')


@pytest.fixture
def registered(monkeypatch):
    """The made-up protocol registered for one test (checked as any protocol is)."""
    Registry([PROTOCOL])
    monkeypatch.setitem(REGISTRY._protocols, PAIRWISE, PROTOCOL)
    return PROTOCOL


@pytest.fixture
def pairs(tmp_path) -> Path:
    lines = [json.dumps({"id": i, "q": q, "first": f"answer one to {i}", "second": f"answer two to {i}",
                         "human": gold}) for i, q, gold in ROWS]
    (tmp_path / "pairs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = tmp_path / "pairs.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    return spec


def test_a_protocol_with_inputs_of_its_own_plans_one_unit_per_row(pairs):
    scenario = PairwiseScenario(protocol=PAIRWISE)
    plan = dataset_plan(PROTOCOL, scenario, pairs, None)
    units = list(plan.units())
    assert plan.total == 3 and [u.id for u in units] == ["p1", "p2", "p3"]
    assert dict(units[1].inputs) == {"question": "Which is clearer? SCRIPTED_LABEL=b",
                                     "response_a": "answer one to p2", "response_b": "answer two to p2"}
    assert [u.gold for u in units] == ["a", "a", "tie"]


@pytest.mark.parametrize("columns, expected", [
    ("{questoin: q, label: human}", "columns.questoin: unknown key (did you mean 'question'?)"),
    ("{label: human}", "columns: names no input column (one of text, target, comments, role, question, "
                       "response_a, response_b)"),
])
def test_a_spec_read_for_inputs_of_its_own_refuses_keys_naming_its_own_schema(tmp_path, columns, expected):
    (tmp_path / "d.jsonl").write_text("{}\n")
    spec = tmp_path / "d.yaml"
    spec.write_text(f"path: d.jsonl\nformat: jsonl\ncolumns: {columns}\n")
    with pytest.raises(DatasetError) as info:
        load_dataset_spec(spec, ["question", "response_a", "response_b"])
    assert str(info.value) == f"{spec}:3: {expected}"


def test_a_spec_read_for_the_built_in_inputs_refuses_another_protocols_keys(pairs):
    with pytest.raises(DatasetError, match=r"columns.question: unknown key \(allowed: text, target, label"):
        load_dataset_spec(pairs, ["text", "target"])


def test_the_made_up_protocol_runs_end_to_end_and_reports(registered, pairs, tmp_path, capsys):
    scenario = tmp_path / "pairwise.yaml"
    scenario.write_text(f"protocol: {PAIRWISE}\n")
    assert main(["validate", str(pairs)]) == 0
    assert capsys.readouterr().out == f"ok: {pairs}\n"
    out = tmp_path / "run"
    assert main([str(scenario), "--dataset", str(pairs), "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].startswith("accuracy=0.6667")  # p2 answered b, gold a
    assert printed.splitlines()[-1].startswith(f"run: {out} items=3 ")
    rows = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert {i: (r["prediction"], r["gold"]) for i, r in rows.items()} == {
        "p1": ("a", "a"), "p2": ("b", "a"), "p3": ("tie", "tie")}
    report = tmp_path / "report"
    assert main(["report", str(out), "--out", str(report)]) == 0
    with open(report / "table.csv", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert row["variant_model"] == "pairwise · scripted"
    assert row["pairs (accuracy)"] == "0.6667"


# --- vary --------------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol, keys", [
    ("conference", ["seed", "model", "personas"]),
    ("cola", ["seed", "model"]), ("s2mad", ["seed", "model"]), ("debate", ["seed", "model"]),
    ("negotiation", ["seed", "model"]), ("judge_eval", ["seed", "model"]),
])
def test_each_protocol_declares_the_keys_vary_takes(protocol, keys):
    assert [k.name for k in REGISTRY.get(protocol).vary] == keys


@pytest.mark.parametrize("given, message", [
    ("sed=1", "did you mean 'seed'?"),
    ("seed", "expected KEY=V1,V2,..."),
    ("personas=x.yaml", "KEY one of seed, model"),
])
def test_an_unknown_vary_key_names_the_protocols_keys(given, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace("?", r"\?")):
        parse_vary(REGISTRY.get("cola"), [given])


@pytest.mark.parametrize("key, value, before, after", [
    (SEED, "7", {"generation": {"temperature": 0.5}}, {"generation": {"temperature": 0.5, "seed": 7}}),
    (MODEL, "scripted", {"models": {"judger": "local", "default": "local"}}, {"models": {"default": "scripted"}}),
])
def test_generic_vary_keys_change_the_scenario_data(key, value, before, after):
    assert key.apply(before, value) == after


@pytest.mark.parametrize("key, value, message", [(SEED, "one", "a seed is a whole number"),
                                                  (MODEL, "gpt-4", "unknown model provider")])
def test_a_bad_vary_value_is_a_value_error_with_its_reason(key, value, message):
    with pytest.raises(ValueError, match=message):
        key.apply({}, value)


def test_set_path_changes_one_key_by_its_dotted_path():
    data = {"judger": {"form": "json", "name": "J"}, "rounds": 2}
    assert set_path(data, "judger.form", "text") == {"judger": {"form": "text", "name": "J"}, "rounds": 2}
    assert set_path(data, "models.judger", "scripted")["models"] == {"judger": "scripted"}
    assert data == {"judger": {"form": "json", "name": "J"}, "rounds": 2}  # not changed in place


def test_a_protocols_own_vary_key_makes_variants_named_by_its_choices():
    doubled = VaryKey("double", "title twice", lambda d, v: {**d, "title": str(v) * 2},
                      lambda values, s: [Choice(f"x{i}", v) for i, v in enumerate(values)])
    protocol = Protocol(name="conference", title="t", paper="p", scenario=REGISTRY.get("conference").scenario,
                        policy=REGISTRY.get("conference").policy, run=REGISTRY.get("conference").run,
                        units=scenario_runs("conferences", "conference"), vary=(SEED, doubled))
    scenario = load_scenario(ROOT / "scenarios" / "drug_policy.yaml")
    plan = variant_plan(protocol, scenario, ["double=ab,c", "seed=3"])
    units = list(plan.units())
    assert [u.id for u in units] == ["double-x0+seed-3", "double-x1+seed-3"]
    assert [u.scenario.title for u in units] == ["abab", "cc"]
    assert [dict(u.variant) for u in units] == [{"double": "x0", "seed": "3"}, {"double": "x1", "seed": "3"}]
    single = variant_plan(protocol, scenario, [])
    assert [u.id for u in single.units()] == ["conference"]


# --- metrics -----------------------------------------------------------------------------------
@pytest.mark.parametrize("labels, applies", [
    (["fake", "real"], True), (["rumor", "non-rumor"], True), (["false", "true"], True),
    (["true", "false", "unverified"], False), (["favor", "against"], False), ([], False),
])
def test_the_rumour_metric_set_applies_to_binary_rumour_labels_only(labels, applies):
    assert RUMOUR.applies(labels) is applies


@pytest.mark.parametrize("protocol, sets, headline", [
    ("s2mad", ["rumor"], "correct"), ("debate", ["rumor"], "correct"), ("cola", [], "correct"),
    ("negotiation", [], "correct"), ("judge_eval", [], "correct"), ("conference", [], "rounds_to_agreement"),
])
def test_each_protocol_declares_its_metric_sets_and_headline(protocol, sets, headline):
    metrics = REGISTRY.get(protocol).metrics
    assert [s.name for s in metrics.sets] == sets and metrics.headline == headline
    assert headline in [m.name for m in metrics.measures]


@pytest.mark.parametrize("row, labels, correct, unparsed", [
    ({"prediction": "favor", "gold": "favor"}, ["favor", "against"], 1.0, 0.0),
    ({"prediction": "against", "gold": "favor"}, ["favor", "against"], 0.0, 0.0),
    ({"prediction": "unparsed", "gold": "favor"}, ["favor", "against"], 0.0, 1.0),
    ({"prediction": "maybe", "gold": "favor"}, ["favor", "against"], 0.0, 1.0),
    ({"prediction": "favor", "gold": None}, ["favor", "against"], None, 0.0),
])
def test_labelled_items_measure_correct_and_unparsed_per_unit(row, labels, correct, unparsed):
    unit = UnitRecord(ResultRow(id="a", **row), labels)
    assert LABELLED.measure("correct").of(unit) == correct
    assert LABELLED.measure("unparsed").of(unit) == unparsed


@pytest.mark.parametrize("topics, agreed, rounds", [
    ([{"topic": 0, "rounds": 2, "closed_by": "agreement"}, {"topic": 1, "rounds": 5, "closed_by": "round_cap"}],
     0.5, 2.0),
    ([{"topic": 0, "rounds": 1, "closed_by": "moderator"}, {"topic": 1, "rounds": 3, "closed_by": "agreement"}],
     1.0, 2.0),
    ([], None, None),
])
def test_a_conference_measures_agreement_from_its_results_row(topics, agreed, rounds):
    metrics = REGISTRY.get("conference").metrics
    unit = UnitRecord(ResultRow.model_validate({"id": "conference", "topics": topics}))
    assert metrics.measure("agreed").of(unit) == agreed
    assert metrics.measure("rounds_to_agreement").of(unit) == rounds
    assert metrics.measure("evaluator_overall").of(unit) is None  # no transcript given


# --- pairing -----------------------------------------------------------------------------------
@pytest.mark.parametrize("row, meta, units, key", [
    ({"id": "a7", "gold": "favor"}, {}, ITEMS, "a7"),
    ({"id": "seed-2+model-x", "variant": {"seed": "2", "model": "x"}}, {}, scenario_runs(), "seed=2"),
    ({"id": "conference"}, {"scenario": {"generation": {"seed": 42}}}, scenario_runs(), "seed=42"),
    ({"id": "conference"}, {"scenario": {"generation": {"seed": "7"}}}, scenario_runs(), "seed=7"),  # a hand edit
    ({"id": "conference"}, {"scenario": {"generation": {"seed": "x"}}}, scenario_runs(), "conference"),
    ({"id": "conference"}, {}, scenario_runs(), "conference"),
])
def test_units_pair_across_runs_by_item_id_or_seed(row, meta, units, key):
    assert units.pair(unit_key(ResultRow.model_validate(row), RunMeta.model_validate(meta))) == key


def test_two_arms_of_a_conference_batch_pair_seed_by_seed():
    arm_a = [ResultRow(id=f"seed-{s}+model-a", variant={"seed": str(s), "model": "a"}) for s in (1, 2, 3)]
    arm_b = [ResultRow(id=f"seed-{s}+model-b", variant={"seed": str(s), "model": "b"}) for s in (3, 1)]
    pairs = {by_seed(unit_key(r, RunMeta())): r.id for r in arm_a}
    assert [(pairs[by_seed(unit_key(r, RunMeta()))], r.id) for r in arm_b] == [
        ("seed-3+model-a", "seed-3+model-b"), ("seed-1+model-a", "seed-1+model-b")]
    assert UnitKey("x").seed is None


# --- registering -------------------------------------------------------------------------------
def _with(**changes) -> Protocol:
    fields = {f: getattr(PROTOCOL, f) for f in PROTOCOL.__dataclass_fields__}
    return Protocol(**{**fields, **changes})


@pytest.mark.parametrize("changes, message", [
    ({"units": scenario_runs()}, "runs of the scenario take none"),
    ({"inputs": ()}, "units that are items need input fields"),
    ({"vary": (SEED, SEED)}, "vary keys must be distinct"),
    ({"metrics": Metrics((CORRECT,), "flips")}, "the headline 'flips' is not one of its measures"),
])
def test_a_protocol_breaking_the_contract_is_refused_when_it_registers(changes, message):
    with pytest.raises(ProtocolError, match=message):
        Registry([_with(**changes)])


def test_two_protocols_may_not_declare_the_same_command():
    command = DatasetCommand("judge-eval", "h", "d", lambda p: None, lambda a, labels: None)  # type: ignore
    with pytest.raises(ProtocolError, match="another protocol's"):
        Registry([*REGISTRY.all(from_yaml=False), _with(commands=(command,))])


# --- what the shared layers import ---------------------------------------------------------------
SHARED = ["moot/engine", "moot/report", "moot/metrics", "moot/data", "moot/contract"]


def _files(where: str) -> list[Path]:
    return sorted((ROOT / where).rglob("*.py"))


def _imports(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return found


@pytest.mark.parametrize("where", SHARED)
def test_the_shared_layers_import_no_protocols_module(where):
    """Only the registry (the protocols' one entry point) may be imported, never a protocol itself."""
    for path in _files(where):
        bad = [name for name in _imports(path) if name.startswith(("moot.protocols.", "moot.agents.",
                                                                  "moot.speaker_selection."))
               and not name.startswith("moot.protocols.registry")]
        assert not bad, f"{path.relative_to(ROOT)}: {bad}"
