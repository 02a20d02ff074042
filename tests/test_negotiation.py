"""Negotiation (Sun et al.) on scripted models: turns, role flip, combination rules, third LLM."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from autogen_core.models import CreateResult, RequestUsage
from run_support import run_item

from moot.cli import main
from moot.log.transcript import load
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.protocols.negotiation.knn import NearestNeighbours, neighbours
from moot.protocols.negotiation.outcome import Result, agreed, combine, vote
from moot.protocols.negotiation.schema import NegotiationScenario
from moot.scenario.load import ScenarioError, load_scenario
from moot.speaker_selection.conference import PolicyError, Turn
from moot.speaker_selection.negotiation import NegotiationPlan, next_speaker

ROOT = Path(__file__).resolve().parent.parent
SPECS = {"first": "scripted", "second": "scripted:AGREEMENT", "third": "scripted:NEXT_TOPIC"}


class Llm(ScriptedChatCompletionClient):
    """As generator: `Decision: <decide>`; as discriminator: attitude from `attitudes` in turn,
    with the decision it was shown when it says "yes" and its own `decide` when it says "no"."""

    def __init__(self, name: str, decide: str, attitudes=("yes",)):
        super().__init__()
        self.name, self.decide, self.attitudes, self.seen = name, decide, list(attitudes), []

    async def create(self, messages, *, tools=(), json_output=None, extra_create_args={},
                     cancellation_token=None) -> CreateResult:
        self.seen.append([str(m.content) for m in messages])
        last = str(messages[-1].content)
        if json_output is not None:
            attitude = self.attitudes.pop(0) if len(self.attitudes) > 1 else self.attitudes[0]
            shown = re.findall(r"^Decision:[ \t]*(.*)$", last, re.M)[-1].strip()
            text = json.dumps({"attitude": attitude, "explanation": f"{self.name} says {attitude}",
                               "decision": shown if attitude == "yes" and shown else self.decide})
        elif last.startswith("Input:"):
            text = f"{self.name} demo text"
        else:
            text = f"{self.name} reasons. Decision: {self.decide}"
        return CreateResult(content=text, usage=RequestUsage(prompt_tokens=1, completion_tokens=1),
                            finish_reason="stop", cached=False)


def run(tmp_path, llms: dict, **fields):
    models = {k: SPECS[k] for k in llms}
    scenario = NegotiationScenario(protocol="negotiation", models=models, **fields)
    result, transcript = run_item("negotiation", scenario, {"text": "a gorgeous witty film"}, llms,
                                  tmp_path / "run", gold="positive")
    return result.outcome, transcript.calls


def test_consensus_in_both_negotiations(tmp_path):
    a, b = Llm("A", "positive"), Llm("B", "positive")
    result, calls = run(tmp_path, {"first": a, "second": b})
    assert result.prediction == "positive"
    # each negotiation is one stage; its generator and discriminator are the two LLMs in turn
    assert sorted((c.stage, c.role) for c in calls) == sorted([("first->second", "first"), ("first->second", "second"),
                                                               ("second->first", "second"), ("second->first", "first")])
    disc_prompt = b.seen[-1][0] if "Please determine whether" in b.seen[-1][0] else b.seen[0][0]
    assert "Reasoning: A reasons. Decision: positive" in disc_prompt and "Decision: positive" in disc_prompt


def test_disagreement_returns_the_explanation_to_the_generator_until_max_turns(tmp_path):
    a, b = Llm("A", "positive", attitudes=["yes"]), Llm("B", "negative", attitudes=["no"])
    result, calls = run(tmp_path, {"first": a, "second": b}, max_turns=2)
    gen_calls = [c for c in calls if (c.stage, c.role) == ("first->second", "first")]
    assert len(gen_calls) == 2
    second = gen_calls[1].messages
    assert [m["type"] for m in second] == ["UserMessage", "AssistantMessage", "UserMessage"]
    assert "The discriminator disagrees with your decision: B says no" in second[2]["content"]
    # first->second: no consensus; second->first: A agrees with B's negative -> the consensus wins
    assert result.prediction == "negative"


def test_conflict_brings_in_the_third_llm_and_a_six_way_vote(tmp_path):
    a, b, c = Llm("A", "positive"), Llm("B", "negative"), Llm("C", "negative")
    result, calls = run(tmp_path, {"first": a, "second": b, "third": c})
    stages = {call.stage.split(" ")[0] for call in calls}
    assert stages == {"first->second", "second->first", "third->first", "first->third", "third->second",
                      "second->third"}
    assert result.prediction == "negative" and "six-way vote" in result.explanation


def test_conflict_without_a_third_llm_is_unparsed(tmp_path):
    result, _ = run(tmp_path, {"first": Llm("A", "positive"), "second": Llm("B", "negative")})
    assert result.prediction == "unparsed"


class Echo(Llm):
    """The QA's embedded-model generator: repeats the prompt's instruction (names every label,
    no decisive "Decision:" line); as discriminator says "yes" with a decision anyway."""

    async def create(self, messages, *, tools=(), json_output=None, extra_create_args={},
                     cancellation_token=None) -> CreateResult:
        if json_output is None and not str(messages[-1].content).startswith("Input:"):
            self.seen.append([str(m.content) for m in messages])
            text = ('Please determine the overall sentiment of test input. Reason step by step, then end with '
                    '"Decision: " and one of: positive, negative.\n\n\nInput: a dull film\nReasoning')
            return CreateResult(content=text, usage=RequestUsage(prompt_tokens=1, completion_tokens=1),
                                finish_reason="stop", cached=False)
        return await super().create(messages, json_output=json_output)


def test_generator_without_a_decisive_label_is_unparsed_not_defaulted(tmp_path):
    """Before: the repeated instruction mapped to "negative" (the label named last) and the
    discriminator's "yes" made it a consensus. Now: no generator decision, so no consensus —
    the discriminator's "yes"/decision does not stand in for it — and the item is unparsed."""
    a, b = Echo("A", "positive"), Echo("B", "positive")
    result, calls = run(tmp_path, {"first": a, "second": b}, max_turns=2)
    assert result.prediction == "unparsed" and "no consensus" in result.explanation
    assert len([c for c in calls if (c.stage, c.role) == ("first->second", "first")]) == 2  # "yes" did not end it
    disc = next(c for c in calls if (c.stage, c.role) == ("first->second", "second")).messages[0]["content"]
    assert disc.rstrip().endswith("Decision:")  # no decision is shown to the discriminator


def test_yes_with_another_decision_is_not_a_consensus():
    gen = ("yes", "negative", "why")
    assert agreed("positive", ("yes", "positive", "")) and not agreed("positive", gen)
    assert not agreed(None, ("yes", "positive", "")) and not agreed("positive", ("no", "positive", ""))


def test_scripted_model_decides_by_the_item_marker(tmp_path, capsys):
    base = [str(ROOT / "scenarios" / "negotiation.yaml"), "--model", "scripted", "--no-cache"]
    assert main(base + ["--input", "text=a dull film SCRIPTED_LABEL=negative", "--out", str(tmp_path / "a.jsonl")]) == 0
    assert "sentiment: negative" in capsys.readouterr().out
    # No mark: the scripted players answer as negotiation declares ("Decision: <label>"), each
    # label picked by its seed and the prompt; here both negotiations agree.
    assert main(base + ["--input", "text=a dull film", "--out", str(tmp_path / "b.jsonl")]) == 0
    assert "sentiment: positive" in capsys.readouterr().out


def test_demonstrations_are_the_nearest_training_items(tmp_path):
    (tmp_path / "train.txt").write_text("1 a witty gorgeous film\n0 a dull boring mess\n1 witty and warm\n")
    (tmp_path / "train.yaml").write_text('path: train.txt\nformat: lines\ncolumns: {label: "0", text: "1"}\n'
                                         'labels: {"0": negative, "1": positive}\n')
    scenario = NegotiationScenario(protocol="negotiation", models=SPECS,
                                   demonstrations={"train": "train.yaml", "k": 2}).resolve_paths(tmp_path)
    assert neighbours(scenario, "gorgeous witty film") == [("a witty gorgeous film", "positive"),
                                                               ("witty and warm", "positive")]
    a, b = Llm("A", "positive"), Llm("B", "positive")
    result, calls = run(tmp_path, {"first": a, "second": b}, demonstrations=scenario.demonstrations)
    generator_prompt = next(c for c in calls if (c.stage, c.role) == ("first->second", "first")).messages[0]["content"]
    assert "Input: a witty gorgeous film\nReasoning: A demo text\nDecision: positive" in generator_prompt
    disc_prompt = next(c for c in calls if (c.stage, c.role) == ("first->second", "second")).messages[0]["content"]
    assert '"explanation": "B demo text"' in disc_prompt


@pytest.mark.parametrize("a, b, expected", [
    ((True, "pos"), (True, "pos"), ("pos", False)), ((True, "pos"), (False, None), ("pos", False)),
    ((False, None), (True, "neg"), ("neg", False)), ((True, "pos"), (True, "neg"), (None, True)),
    ((False, None), (False, None), (None, True)),
])
def test_combination_rules(a, b, expected):
    assert combine(Result("x", "y", *a), Result("y", "x", *b)) == expected


def test_vote_counts_decisions_and_breaks_ties_by_order():
    rs = [Result("a", "b", True, d) for d in ("pos", "neg", "neg", None, "pos", "neg")]
    assert vote(rs) == "neg"
    assert vote([Result("a", "b", True, "pos"), Result("a", "b", True, "neg")]) == "pos"
    assert vote([Result("a", "b", False, None)]) is None


@pytest.mark.parametrize("turns, expected", [
    ([], "g"), ([("g", None)], "d"), ([("g", None), ("d", "yes")], None), ([("g", None), ("d", "no")], "g"),
    ([("g", None), ("d", "no"), ("g", None), ("d", "no")], None),
])
def test_negotiation_speaker_selection(turns, expected):
    assert next_speaker(NegotiationPlan("g", "d", max_turns=2), [Turn(s, x) for s, x in turns]) == expected
    with pytest.raises(PolicyError):
        next_speaker(NegotiationPlan("g", "d"), [Turn("d")])


def test_knn_ranks_by_tfidf_cosine():
    index = NearestNeighbours(["the cat sat", "dogs bark loudly", "a cat and a dog"])
    assert index.query("cat", 2) == [0, 2]


def test_same_model_needs_the_offline_flag(tmp_path):
    path = tmp_path / "n.yaml"
    path.write_text("protocol: negotiation\nmodels: {first: local, second: local}\n")
    with pytest.raises(ScenarioError, match="different model specs"):
        load_scenario(path)
    assert load_scenario(ROOT / "scenarios" / "negotiation.yaml").allow_same_model


@pytest.mark.slow
def test_negotiation_one_text_with_the_embedded_model(tmp_path, capsys):
    scenario = tmp_path / "n.yaml"
    scenario.write_text("protocol: negotiation\nmodels: {first: local, second: local}\nallow_same_model: true\n"
                        "max_turns: 1\ngeneration: {temperature: 0.0, max_tokens: 48, seed: 0}\n")
    out = tmp_path / "one"
    assert main([str(scenario), "--input", "text=a gorgeous , witty , seductive movie .",
                 "--out", str(out), "--no-cache"]) == 0
    assert "sentiment: " in capsys.readouterr().out
    transcript = load(next(out.glob("item-*.jsonl")))
    calls = transcript.calls
    # Each negotiation on the embedded default (a base model): the generator's reasoning turn in
    # its document and its decision read by likelihood, the discriminator's yes/no by likelihood,
    # and only after a "no" its explanation turn and its own decision; no structured output.
    assert not any(c.output for c in calls) and all(c.messages[0]["source"] == "document" for c in calls)
    answers = [c for c in calls if c.kind == "choice" and c.stage != "calibration"]
    yes_no = [c for c in answers if set(c.detail.probabilities) == {"yes", "no"}]
    decisions = [c for c in answers if set(c.detail.probabilities) == {"positive", "negative"}]
    said_no = [m for m in transcript.messages if m.content == "no"]
    assert len(yes_no) == 2 and len(decisions) == 2 + len(said_no) and len(answers) == len(yes_no) + len(decisions)
    for c in answers:
        assert c.detail.method == "likelihood" and abs(sum(c.detail.probabilities.values()) - 1) < 1e-3
        assert c.reply == max(c.detail.probabilities, key=c.detail.probabilities.get)
    # Decisions are calibrated (three content-free twins each); the yes/no is not (calibrated, it said no to all).
    assert len([c for c in calls if c.stage == "calibration"]) == 3 * len(decisions)
    assert len([c for c in calls if c.kind == "continue"]) == 2 + len(said_no)


def test_the_knn_scenario_runs_once_a_training_split_is_in_place(tmp_path, capsys):
    """scenarios/negotiation_knn.yaml as shipped, beside a datasets/sst2_train.yaml whose file a user
    supplied (here one the test writes): the generator is shown the nearest training items with the
    reasoning chains it wrote for them, the discriminator the same items with its explanations."""
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "datasets").mkdir()
    shipped = (ROOT / "scenarios" / "negotiation_knn.yaml").read_text()
    (tmp_path / "scenarios" / "negotiation_knn.yaml").write_text(shipped)
    (tmp_path / "datasets" / "train.txt").write_text(
        "1 a witty , gorgeous film\n0 a dull , boring mess\n1 seductive and warm\n0 lifeless\n1 witty fun\n"
        "0 tedious\n")
    spec = (ROOT / "datasets" / "sst2_train.yaml").read_text()
    (tmp_path / "datasets" / "sst2_train.yaml").write_text(re.sub(r"(?m)^path: .*$", "path: train.txt", spec))
    out = tmp_path / "run"
    assert main([str(tmp_path / "scenarios" / "negotiation_knn.yaml"), "--model", "scripted", "--out", str(out),
                 "--quiet"]) == 0  # the scripted players decide as negotiation declares
    calls = load(next(out.glob("item-*.jsonl"))).calls
    demos = [c for c in calls if c.stage == "demo_reasoning"]
    assert len(demos) == 2 * 4  # K = 4 demonstrations, a chain by each LLM as generator
    generator = next(c for c in calls if c.stage == "first->second" and c.role == "first").messages[0]["content"]
    assert "Input: a witty , gorgeous film\nReasoning: " in generator and "Input: tedious" not in generator
    assert generator.index("Input: a witty , gorgeous film") < generator.rindex("Input: a gorgeous , witty")
    discriminator = next(c for c in calls if c.stage == "first->second" and c.role == "second").messages[0]["content"]
    assert '{"attitude": "yes", "explanation": ' in discriminator and "Input: seductive and warm" in discriminator
