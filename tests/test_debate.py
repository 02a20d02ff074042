"""Multi-agent debate (Du et al. 2023): turn order, what each agent sees, the vote, whole runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from autogen_core.models import AssistantMessage, CreateResult, RequestUsage, UserMessage

from moot.cli import main
from moot.metrics.classification import UNPARSED
from moot.models.engine import ModelEngine
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.contract.check import check
from moot.protocols.registry import REGISTRY
from moot.protocols.debate.protocol import PROTOCOL
from moot.protocols.debate.schema import DebateScenario
from moot.protocols.debate.vote import vote
from moot.kit._context import Unit
from moot.engine.folder import RunFolder
from moot.engine.runner import RunSetup, run_unit
from moot.engine.setup import resolve_models, role_models
from moot.errors import UsageError
from moot.scenario.load import load_scenario
from moot.speaker_selection.conference import PolicyError
from moot.speaker_selection.debate import DebatePlan, next_speaker
from moot.log.transcript import load

ROOT = Path(__file__).resolve().parent.parent
A, B, C = "agent_1", "agent_2", "agent_3"


# ---------------------------------------------------------------- the turn policy

@pytest.mark.parametrize("agents, rounds, spoken, expected", [
    ((A, B, C), 2, [], A),
    ((A, B, C), 2, [A], B),
    ((A, B, C), 2, [A, B, C], A),  # round 1 starts again with the first agent
    ((A, B, C), 2, [A, B, C, A, B, C, A, B], C),
    ((A, B, C), 2, [A, B, C, A, B, C, A, B, C], None),  # after round R
    ((A, B, C), 0, [A, B], C),
    ((A, B, C), 0, [A, B, C], None),  # R = 0: the independent answers only
    ((A,), 2, [A], A),  # one agent: its rounds of self-reflection
    ((A,), 2, [A, A, A], None),
])
def test_debate_speaker_selection(agents, rounds, spoken, expected):
    assert next_speaker(DebatePlan(agents, rounds), spoken) == expected


@pytest.mark.parametrize("turn, round_", [(0, 0), (2, 0), (3, 1), (8, 2)])
def test_round_of_a_turn(turn, round_):
    assert DebatePlan((A, B, C), 2).round_of(turn) == round_


@pytest.mark.parametrize("spoken", [[B], [A, C], [A, B, C, B], [A, B, C, A, B, C, A, B, C, A]])
def test_debate_selection_rejects_another_order(spoken):
    with pytest.raises(PolicyError, match="do not follow the debate order"):
        next_speaker(DebatePlan((A, B, C), 2), spoken)


@pytest.mark.parametrize("agents, rounds", [((), 1), ((A, A), 1), ((A, B), -1)])
def test_debate_plan_is_checked(agents, rounds):
    with pytest.raises(ValueError):
        DebatePlan(agents, rounds)


# ---------------------------------------------------------------- the vote

U = UNPARSED


@pytest.mark.parametrize("answers, tie, expected, decided_by", [
    ([["favor", "favor", "against"]], "unparsed", "favor", "majority"),
    ([["against", "favor", "favor"], ["favor", "favor", "against"]], "unparsed", "favor", "majority"),
    ([["favor", U, U]], "unparsed", "favor", "plurality"),  # unparsed answers do not vote
    ([[U, U, U]], "first_agent", U, "no_answer"),
    ([["favor", "against", "neutral"]], "unparsed", U, "tie"),
    ([["favor", "against", U]], "unparsed", U, "tie"),
    ([["neutral", "against", "favor"]], "first_agent", "neutral", "tie_first_agent"),
    ([[U, "against", "favor"]], "first_agent", "against", "tie_first_agent"),
    ([["favor", "favor", "against", "against"]], "first_agent", "favor", "tie_first_agent"),
    ([["against", "against", "favor"], ["favor", "against", "neutral"]], "previous_rounds", "against",
     "tie_previous_rounds"),
    # round 1 is tied too (between the two tied labels): round 0 settles it
    ([["favor", "favor", "against"], ["favor", "against", U], ["against", "favor", "neutral"]], "previous_rounds",
     "favor", "tie_previous_rounds"),
    # the latest earlier round that separates them, not the first
    ([["against", "against", "favor"], ["favor", "favor", "against"], ["favor", "against", "neutral"]],
     "previous_rounds", "favor", "tie_previous_rounds"),
    # no earlier round separates them
    ([["favor", "against", "neutral"], ["against", "favor", "neutral"]], "previous_rounds", U, "tie"),
    ([["favor", "against", "neutral"]], "previous_rounds", U, "tie"),  # R = 0: nothing earlier
])
def test_vote(answers, tie, expected, decided_by):
    label, explanation, by = vote(answers, tie)
    assert (label, by) == (expected, decided_by)
    assert f"after round {len(answers) - 1}: {', '.join(answers[-1])}" in explanation


def test_vote_explains_itself():
    assert vote([["favor", "favor", "against"]] * 3, "unparsed")[1] == \
        "majority 2 of 3 after round 2: favor, favor, against"
    assert vote([["favor", "against", U]], "first_agent")[1] == \
        "tie 1-1 between favor, against after round 0: favor, against, unparsed; the first agent's: favor"
    assert vote([["favor", "against", U]], "unparsed")[1].endswith("; no label claimed (tie: unparsed)")


# ---------------------------------------------------------------- one item, per-agent answers

class PerAgent(ScriptedChatCompletionClient):
    """One agent's model: answers `labels[r]` in round r (None: an answer with no label),
    records what it was shown; `delay` holds each reply so concurrent calls overlap."""

    live = 0  # calls in flight across every agent (class-wide)
    peak = 0

    def __init__(self, name: str, labels, delay: float = 0.0):
        super().__init__()
        self.name, self.labels, self.delay = name, list(labels), delay
        self.seen: list[list[tuple[str, str]]] = []

    async def create(self, messages, *, tools=(), json_output=None, extra_create_args={},
                     cancellation_token=None) -> CreateResult:
        self.seen.append([(type(m).__name__, str(m.content)) for m in messages])
        r = len(self.seen) - 1
        PerAgent.live += 1
        PerAgent.peak = max(PerAgent.peak, PerAgent.live)
        try:
            await asyncio.sleep(self.delay)
        finally:
            PerAgent.live -= 1
        label = self.labels[r]
        text = f"{self.name} round {r} reasons." + (f"\nAnswer: {label}" if label else " I cannot tell.")
        return CreateResult(content=text, usage=RequestUsage(prompt_tokens=3, completion_tokens=2),
                            finish_reason="stop", cached=False)


def run_item(tmp_path, answers: dict[str, list], text="Teachers matter.", target="online classes",
             delay=0.0, **fields):
    """Run one item with one PerAgent model per agent; (result, clients by agent, transcript)."""
    specs = {a: "scripted:" + ",".join(["AGREEMENT"] * i) for i, a in enumerate(answers, 1)}  # distinct specs
    scenario = DebateScenario(protocol="debate", agents=len(answers), models=specs, **fields)
    clients = {a: PerAgent(a, labels, delay) for a, labels in answers.items()}
    engine = ModelEngine(clients={specs[a]: c for a, c in clients.items()}, concurrency=8)
    inputs = {"text": text, **({"target": target} if target else {})}
    unit = Unit("item", scenario, inputs, gold="favor")
    models = role_models(scenario, resolve_models(scenario))

    async def go():
        try:
            with RunFolder(tmp_path / "run") as folder:
                return await run_unit(RunSetup(PROTOCOL, "s.yaml", "sha"), unit, folder, engine, models)
        finally:
            await engine.close()

    result = asyncio.run(go())
    return result, clients, load(result.transcript)


def test_each_agent_sees_the_others_previous_answers_and_keeps_its_own_chat(tmp_path):
    answers = {A: ["favor", "against", "against"], B: ["against", "against", "against"],
               C: ["neutral", "favor", "against"]}
    _, clients, _ = run_item(tmp_path, answers)
    for name, client in clients.items():
        assert len(client.seen) == 3  # round 0 + 2 rounds
        first = client.seen[0]
        assert [kind for kind, _ in first] == ["UserMessage"]
        assert "Text: Teachers matter." in first[0][1] and 'towards "online classes"' in first[0][1]
        assert 'end with "Answer: " followed by one of: favor, against, neutral' in first[0][1]
        for r in (1, 2):
            shown = client.seen[r]
            # its own memory: every earlier prompt and its own answer, in order (Du et al.)
            assert [kind for kind, _ in shown] == ["UserMessage", "AssistantMessage"] * r + ["UserMessage"]
            assert shown[:2 * r - 1] == client.seen[r - 1]
            assert shown[2 * r - 1] == ("AssistantMessage", f"{name} round {r - 1} reasons.\nAnswer: {answers[name][r - 1]}")
            ask = shown[-1][1]
            assert ask.startswith("These are the solutions to the problem from other agents:")
            others = [o for o in answers if o != name]
            for other in others:  # the others' previous answers, in agent order ...
                # each further line of an answer indented: no answer can write a line that reads as the prompt's own
                assert f"One agent solution: ```{other} round {r - 1} reasons.\n    Answer: {answers[other][r - 1]}```" in ask
            assert ask.index(others[0] + " round") < ask.index(others[1] + " round")
            assert f"{name} round" not in ask  # ... and not its own twice
            assert f"round {r - 2} reasons" not in ask  # nor older rounds (those are in its memory)
            assert "Using the reasoning from other agents as additional advice" in ask


def test_revised_answers_decide_and_every_turn_is_recorded(tmp_path):
    answers = {A: ["favor", "against", "against"], B: ["against", "against", "against"],
               C: ["neutral", "favor", "favor"]}
    result, _, transcript = run_item(tmp_path, answers)
    assert result.status == "completed"
    messages = transcript.messages
    assert [(m.speaker, m.action, m.round) for m in messages] == \
        [(a, "answer", 0) for a in (A, B, C)] + [(a, "debate", r) for r in (1, 2) for a in (A, B, C)]
    assert [m.decision for m in messages] == ["favor", "against", "neutral", "against", "against", "favor",
                                              "against", "against", "favor"]
    outcome = transcript.outcome
    assert (outcome.prediction, outcome.decided_by) == ("against", "majority")
    assert outcome.explanation == "majority 2 of 3 after round 2: against, against, favor"
    assert outcome.raw == messages[6].content  # the first answer that carried the label
    assert result.row(tmp_path)["answers"] == [["favor", "against", "neutral"], ["against", "against", "favor"],
                                               ["against", "against", "favor"]]


@pytest.mark.parametrize("tie, expected", [("unparsed", UNPARSED), ("first_agent", "neutral"),
                                           ("previous_rounds", "favor")])
def test_tie_rules_in_a_run(tmp_path, tie, expected):
    answers = {A: ["favor", "neutral"], B: ["favor", None], C: ["against", "favor"]}
    _, _, transcript = run_item(tmp_path, answers, rounds=1, tie=tie)
    assert [m.decision for m in transcript.messages][-3:] == ["neutral", UNPARSED, "favor"]
    assert transcript.outcome.prediction == expected
    assert (transcript.outcome.raw is None) == (expected == UNPARSED)


def test_all_unparsed_is_unparsed_with_no_raw(tmp_path):
    _, _, transcript = run_item(tmp_path, {A: [None], B: [None], C: [None]}, rounds=0)
    assert transcript.outcome.prediction == UNPARSED and transcript.outcome.raw is None
    assert transcript.outcome.explanation == "no parseable answer after round 0: unparsed, unparsed, unparsed"


def test_zero_rounds_are_independent_answers_only(tmp_path):
    _, clients, transcript = run_item(tmp_path, {A: ["favor"], B: ["favor"], C: ["against"]}, rounds=0)
    assert [len(c.seen) for c in clients.values()] == [1, 1, 1]
    assert transcript.outcome.prediction == "favor"


def test_one_agent_reflects_on_its_own_answer(tmp_path):
    _, clients, transcript = run_item(tmp_path, {A: ["favor", "against"]}, rounds=1)
    shown = clients[A].seen[1]
    assert [k for k, _ in shown] == ["UserMessage", "AssistantMessage", "UserMessage"]
    assert shown[-1][1].startswith("Can you double check that your answer is correct?")
    assert transcript.outcome.prediction == "against"


def test_a_rounds_calls_run_concurrently(tmp_path):
    PerAgent.peak = 0
    run_item(tmp_path, {A: ["favor"] * 2, B: ["favor"] * 2, C: ["favor"] * 2}, rounds=1, delay=0.05)
    assert PerAgent.peak == 3


def test_without_a_target_the_question_reads_well_and_labels_are_the_scenarios(tmp_path):
    answers = {A: ["positive"], B: ["Negative"], C: ["positive"]}
    _, clients, transcript = run_item(tmp_path, answers, text="a gorgeous film", target=None, rounds=0,
                                      labels=["positive", "negative"])
    prompt = clients[A].seen[0][0][1]
    assert "Question: Which of these labels fits the text best: positive, negative?" in prompt
    assert "towards" not in prompt and "$" not in prompt
    assert transcript.outcome.prediction == "positive"
    assert [m.decision for m in transcript.messages] == ["positive", "negative", "positive"]


def test_aliases_and_a_task_question(tmp_path):
    answers = {A: ["false"], B: ["fake"], C: ["true"]}
    _, clients, transcript = run_item(
        tmp_path, answers, text="The bridge collapsed.", target=None, rounds=0, labels=["fake", "real"],
        aliases={"false": "fake", "true": "real"}, prompts={"question": "Is this post fake or real?"})
    assert "Question: Is this post fake or real?" in clients[A].seen[0][0][1]
    assert [m.decision for m in transcript.messages] == ["fake", "fake", "real"]


def test_agents_draw_with_their_own_seed():
    s = DebateScenario(protocol="debate", agents=3, generation={"temperature": 1.0, "seed": 7})
    assert [s.generation_for(r).seed for r in s.roles()] == [7, 8, 9]
    assert {s.generation_for(r).temperature for r in s.roles()} == {1.0}
    assert DebateScenario(protocol="debate").generation.temperature == 1.0  # Du et al.: the API's default


# ---------------------------------------------------------------- the scenario

def test_protocol_keeps_the_contract_and_is_registered():
    check(PROTOCOL)
    assert REGISTRY.get("debate") is PROTOCOL and "debate" in REGISTRY.names()
    scenario = load_scenario(ROOT / "scenarios" / "debate.yaml")
    assert (scenario.agents, scenario.rounds, scenario.labels) == (3, 2, ["favor", "against", "neutral"])
    assert scenario.input_fields() == {"text": scenario.input.text, "target": "online classes"}


def test_model_keys_per_agent_and_for_all_agents():
    s = DebateScenario(protocol="debate", models={"default": "scripted", "agents": "ollama:a", "agent_2": "ollama:b"})
    assert resolve_models(s) == {A: "ollama:a", B: "ollama:b", C: "ollama:a"}
    assert resolve_models(s, ["agent_3=scripted"])[C] == "scripted"
    assert resolve_models(s, ["agents=scripted"]) == {A: "scripted", B: "scripted", C: "scripted"}


@pytest.mark.parametrize("extra, message", [
    ("models: {agent_4: local}", "models.agent_4: unknown role"),
    ("generation: {seed: null}", "generation.seed: must be set"),
    ("labels: [positive, negative]\nmetric: f_avg", "metric: f_avg needs"),
    ("labels: [positive, negative]\nmetric: rf1", "metric: rf1 needs one of the labels"),
    ("prompts: {debate: 'see $answers'}", "prompts.debate: unknown placeholder $answers"),
    ("prompts: {judge: x}", "prompts.judge: unknown prompt"),
    ("tie: random", "tie"),
    ("agents: 0", "agents"),
    ("aliases: {yes: maybe}", "aliases"),
])
def test_bad_debate_scenarios_name_the_key(tmp_path, extra, message):
    path = tmp_path / "bad.yaml"
    path.write_text(f"protocol: debate\n{extra}\n", encoding="utf-8")
    with pytest.raises(Exception) as caught:
        load_scenario(path)
    assert message in str(caught.value)


def test_greedy_identical_agents_are_refused():
    s = DebateScenario(protocol="debate", generation={"temperature": 0})
    with pytest.raises(UsageError, match="every agent gives the same answer"):
        resolve_models(s, ["scripted"])
    assert resolve_models(s, ["scripted", "agent_2=scripted:AGREEMENT"])  # different models: fine


# ---------------------------------------------------------------- whole runs from the command line

def last_line(capsys) -> str:
    return capsys.readouterr().out.strip().splitlines()[-1]


def test_whole_run_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["run", str(ROOT / "scenarios" / "debate.yaml"), "--model", "scripted", "--out", str(out),
            "--input", "text=Online classes are great SCRIPTED_LABEL=favor"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "answer: favor" in printed and "majority 3 of 3 after round 2: favor, favor, favor" in printed
    assert printed.strip().splitlines()[-1] == f"run: {out} items=1 backend_calls=9 cache_hits=0 unparsed=0"
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["prediction"] == "favor" and rows[0]["status"] == "completed"
    assert rows[0]["answers"] == [["favor"] * 3] * 3
    transcript = load(out / rows[0]["transcript"])
    kinds = [e.type for e in transcript.events]
    assert kinds == ["run_started"] + ["call", "message"] * 9 + ["outcome", "run_finished"]
    started = transcript.started
    assert started.protocol == "debate" and started.models == {A: "scripted", B: "scripted", C: "scripted"}
    assert [started.settings[a]["seed"] for a in (A, B, C)] == [0, 1, 2]
    assert started.inputs == {"text": "Online classes are great SCRIPTED_LABEL=favor", "target": "online classes"}
    assert all(m.decision == "favor" for m in transcript.messages)
    assert [c.role for c in transcript.calls] == [A, B, C] * 3
    assert transcript.finished.status == "completed" and transcript.outcome.decided_by == "majority"
    assert main(argv) == 0  # the same command again: nothing is sent
    assert last_line(capsys) == f"run: {out} items=1 backend_calls=0 cache_hits=0 unparsed=0"


def test_bundled_scenario_runs_by_name_with_its_default_item(tmp_path, capsys):
    # The scripted model answers as debate declares (moot.models.expect): "Answer: <label>", every
    # answer read; the agents' seeds differ, and so do their labels.
    assert main(["run", "debate", "--model", "scripted", "--out", str(tmp_path / "r"), "--quiet"]) == 0
    assert last_line(capsys) == f"run: {tmp_path / 'r'} items=1 backend_calls=9 cache_hits=0 unparsed=0"
    transcript = load(next((tmp_path / "r").glob("item-*.jsonl")))
    decisions = [m.decision for m in transcript.messages]
    assert len(decisions) == 9 and UNPARSED not in decisions and len(set(decisions)) > 1


def write_dataset(tmp_path: Path) -> Path:
    rows = [("1", "Masks work SCRIPTED_LABEL=favor", "masks", "FAVOR"),
            ("2", "Masks are useless SCRIPTED_LABEL=against", "masks", "AGAINST"),
            ("3", "Masks exist SCRIPTED_LABEL=favor", "masks", "NONE"),
            ("4", "Taxes are theft SCRIPTED_LABEL=GARBAGE", "taxes", "AGAINST")]
    lines = ["id,text,target,stance"] + [",".join(r) for r in rows]
    (tmp_path / "tiny.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = tmp_path / "tiny.yaml"
    spec.write_text("path: tiny.csv\nformat: csv\ncolumns: {id: id, text: text, target: target, label: stance}\n"
                    "labels: {FAVOR: favor, AGAINST: against, NONE: neutral}\nmetric: f_avg\n", encoding="utf-8")
    return spec


def test_dataset_run_prints_metrics_and_a_rerun_sends_nothing(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["run", str(ROOT / "scenarios" / "debate.yaml"), "--dataset", str(write_dataset(tmp_path)),
            "--model", "scripted", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "f_avg=0.6667  n=4  unparsed=1" in printed and "accuracy=0.5000" in printed
    assert printed.strip().splitlines()[-1] == \
        f"run: {out} items=4 backend_calls=36 cache_hits=0 unparsed=1"
    rows = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert {i: (r["prediction"], r["gold"]) for i, r in rows.items()} == \
        {"1": ("favor", "favor"), "2": ("against", "against"), "3": ("favor", "neutral"), "4": (UNPARSED, "against")}
    assert main(argv) == 0
    assert last_line(capsys) == f"run: {out} items=4 backend_calls=0 cache_hits=0 unparsed=1"


def test_run_conference_shorthand(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(ROOT / "run_conference.py"), str(ROOT / "scenarios" / "debate.yaml"),
                           "--model", "scripted", "--out", str(tmp_path / "dbt"), "--quiet"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.strip().splitlines()[-1].endswith("items=1 backend_calls=9 cache_hits=0 unparsed=0")
