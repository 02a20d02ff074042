"""ChatEval (Chan et al. 2023): the panel's turn policy by tables, what each referee sees in each
communication strategy, reading and summing scores (unreadable ones unparsed, never a tie), both
orders of the answers, Cohen's kappa against sklearn, the report table, the dataset specs, the
base model's document, and a unit continued after it was cut short."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pytest
from autogen_core.models import CreateResult, RequestUsage
from run_support import run_item, run_scenario
from sklearn.metrics import cohen_kappa_score

from moot.cli import main
from moot.contract.check import check
from moot.data.spec import DatasetError, load_dataset_spec
from moot.errors import EXIT_UNPARSED
from moot.kit._order import PolicyError
from moot.log.transcript import load
from moot.metrics.classification import UNPARSED
from moot.models.requests import Score, request_of
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.models.backends.scripted.requests import answer
from moot.protocols.chateval.events import Judgement, aggregate, read_scores
from moot.protocols.chateval.protocol import PROTOCOL
from moot.protocols.chateval.report import cohen_kappa
from moot.protocols.chateval.schema import ChatEvalScenario
from moot.protocols.registry import REGISTRY
from moot.scenario.load import load_scenario
from moot.speaker_selection.chateval import SUMMARIZER, PanelPlan, Turn, next_speaker

ROOT = Path(__file__).resolve().parents[1]
R1, R2, R3, S = "referee_1", "referee_2", "referee_3", SUMMARIZER
GP, CRITIC = "General Public", "Critic"


# ---------------------------------------------------------------- the panel's policy, by tables

@pytest.mark.parametrize("strategy, turns, order", [
    ("one_by_one", 2, (R1, R2, R1, R2)),
    ("simultaneous", 2, (R1, R2, R1, R2)),
    ("simultaneous_summarizer", 2, (R1, R2, S, S, R1, R2)),
    ("simultaneous_summarizer", 3, (R1, R2, S, S, R1, R2, S, S, R1, R2)),
    ("one_by_one", 1, (R1, R2)),
])
def test_each_strategy_s_speaking_order(strategy, turns, order):
    plan = PanelPlan((R1, R2), turns, strategy)
    assert plan.order() == order
    spoken: list[str] = []
    while (speaker := next_speaker(plan, spoken)) is not None:
        spoken.append(speaker)
    assert tuple(spoken) == order


@pytest.mark.parametrize("strategy, turns, position, shown", [
    # one by one: every earlier message, the referee's own included
    ("one_by_one", 2, 0, ()), ("one_by_one", 2, 1, (0,)), ("one_by_one", 2, 2, (0, 1)), ("one_by_one", 2, 3, (0, 1, 2)),
    # simultaneous talk: the earlier turns only
    ("simultaneous", 2, 1, ()), ("simultaneous", 2, 2, (0, 1)), ("simultaneous", 2, 3, (0, 1)),
    ("simultaneous", 3, 5, (0, 1, 2, 3)),
    # with the summarizer: a summary per referee (positions 2, 3) after the raw messages, which stay
    ("simultaneous_summarizer", 2, 2, (0, 1)), ("simultaneous_summarizer", 2, 3, (0, 1)),
    ("simultaneous_summarizer", 2, 4, (0, 1, 2)), ("simultaneous_summarizer", 2, 5, (0, 1, 3)),
    # turn 3: the summary for referee_1 (position 6) reads its memory, its own earlier summary in it
    ("simultaneous_summarizer", 3, 6, (0, 1, 2, 4, 5)), ("simultaneous_summarizer", 3, 8, (0, 1, 2, 4, 5, 6)),
    ("simultaneous_summarizer", 3, 9, (0, 1, 3, 4, 5, 7)),
])
def test_what_each_turn_sees(strategy, turns, position, shown):
    assert PanelPlan((R1, R2), turns, strategy).shown(position) == shown


@pytest.mark.parametrize("strategy, position, together", [
    ("one_by_one", 2, (2,)), ("simultaneous", 2, (2, 3)), ("simultaneous", 1, (0, 1)),
    ("simultaneous_summarizer", 2, (2, 3)), ("simultaneous_summarizer", 5, (4, 5)),
])
def test_calls_that_start_together(strategy, position, together):
    assert PanelPlan((R1, R2), 2, strategy).together(position) == together


def test_the_last_turn_and_whom_a_summary_is_for():
    plan = PanelPlan((R1, R2, R3), 2, "simultaneous_summarizer")
    assert [plan.final(p) for p in range(len(plan.order()))] == [False] * 6 + [True] * 3
    assert plan.schedule()[3:6] == (Turn(S, 2, R1), Turn(S, 2, R2), Turn(S, 2, R3))


@pytest.mark.parametrize("spoken", [[R2], [R1, R1], [R1, R2, R1, R2, R1]])
def test_a_conversation_off_the_order_is_a_policy_error(spoken):
    with pytest.raises(PolicyError, match="do not follow the ChatEval panel order"):
        next_speaker(PanelPlan((R1, R2), 2, "one_by_one"), spoken)


@pytest.mark.parametrize("referees, turns, strategy", [((), 2, "one_by_one"), ((R1, R1), 2, "one_by_one"),
                                                       ((R1, S), 2, "one_by_one"), ((R1,), 0, "one_by_one"),
                                                       ((R1,), 2, "round_robin")])
def test_a_bad_plan_is_refused(referees, turns, strategy):
    with pytest.raises(ValueError):
        PanelPlan(referees, turns, strategy)


# ---------------------------------------------------------------- reading scores

@pytest.mark.parametrize("text, order, scores", [
    ("Evaluation evidence: good.\nThe score of Assistant 1: 8\nThe score of Assistant 2: 6", "ab", {"a": 8, "b": 6}),
    ("Evidence.\n\nThe score of Assistant 1: 8\n\nThe score of Assistant 2: 6.5\n", "ba", {"b": 8, "a": 6.5}),
    ("**The score of Assistant 1:** 7/10\n**The score of Assistant 2:** 9 out of 10", "ab", {"a": 7, "b": 9}),
    ("the score of assistant 1: 3\nthe score of assistant 2: 3", "ab", {"a": 3, "b": 3}),
    ("Evaluation evidence: fine.\nThe score of the assistant: 4", "panel", {"a": 4}),
])
def test_scores_read_from_the_last_lines(text, order, scores):
    assert read_scores(text, order) == (scores, None)


@pytest.mark.parametrize("text, why", [
    ("The score of Assistant 1: 8", "does not end with"),  # one line only
    ("The score of Assistant 2: 6\nThe score of Assistant 1: 8", "does not end with"),  # swapped lines
    ("The score of Assistant 1: 8\nThe score of Assistant 2: 6\nThanks!", "does not end with"),
    ("The score of Assistant 1: eight\nThe score of Assistant 2: 6", "does not end with"),
    ("The score of Assistant 1: 8\nThe score of Assistant 2: 6 or 7", "does not end with"),
    ("The score of Assistant 1: 85\nThe score of Assistant 2: 6", "is 85, outside 1-10"),
    ("The score of Assistant 1: 0\nThe score of Assistant 2: 6", "is 0, outside 1-10"),
    ("", "does not end with"),
])
def test_unreadable_scores_say_why(text, why):
    scores, error = read_scores(text, "ab")
    assert scores == {} and why in error


def judged(speaker: str, order: str, scores: dict, parsed: bool = True) -> Judgement:
    return Judgement(turn=1, speaker=speaker, role=speaker, order=order, scores=scores if parsed else {}, parsed=parsed,
                     error=None if parsed else "x")


@pytest.mark.parametrize("judgements, prediction, explanation", [
    ([judged(GP, "ab", {"a": 8, "b": 6}), judged(CRITIC, "ab", {"a": 8, "b": 7}),
      judged(GP, "ba", {"a": 8, "b": 6}), judged(CRITIC, "ba", {"a": 6, "b": 9})],
     "a", "sums over 2 referee(s) x 2 order(s): a 30, b 28"),
    ([judged(GP, "ab", {"a": 8, "b": 6}), judged(CRITIC, "ab", {"a": 5, "b": 7})],
     "tie", "sums over 2 referee(s) x 1 order(s): a 13, b 13 (equal: tie)"),
    ([judged(GP, "ba", {"a": 2.5, "b": 2.75})], "b", "sums over 1 referee(s) x 1 order(s): a 2.5, b 2.75"),
    # one unreadable judgement: the item is unparsed (the code would call it a tie)
    ([judged(GP, "ab", {"a": 8, "b": 8}), judged(CRITIC, "ba", {}, parsed=False)],
     UNPARSED, "1 of 2 judgements unreadable: Critic (ba)"),
])
def test_the_code_s_aggregation(judgements, prediction, explanation):
    outcome = aggregate(judgements, "pairwise")
    assert (outcome.prediction, outcome.explanation) == (prediction, explanation)


def test_scores_task_is_the_referees_mean():
    outcome = aggregate([judged(GP, "panel", {"a": 7}), judged(CRITIC, "panel", {"a": 8.5})], "scores")
    assert (outcome.prediction, outcome.summary["score"]) == (None, 7.75)
    assert aggregate([judged(GP, "panel", {}, parsed=False)], "scores").prediction is None


# ---------------------------------------------------------------- Cohen's kappa = sklearn

KAPPA_CASES = [
    (["a", "b", "tie", "a", "b", "a"], ["a", "b", "a", "a", "tie", "b"]),
    (["a", "a", "b", "tie", "b", "a", "a", "tie"], ["a", UNPARSED, "b", "tie", "a", "a", UNPARSED, "b"]),
    (["a", "b", "a", "b"], ["b", "a", "b", "a"]),  # perfect disagreement: negative
    (["a", "b", "tie"], ["a", "b", "tie"]),
    (["a"] * 5 + ["b"] * 3 + ["tie"] * 2, ["a"] * 4 + ["tie"] + ["b"] * 2 + ["a"] + ["tie", "b"]),
]


@pytest.mark.parametrize("gold, pred", KAPPA_CASES)
def test_cohen_kappa_equals_sklearn(gold, pred):
    assert cohen_kappa(gold, pred) == pytest.approx(cohen_kappa_score(gold, pred), abs=1e-12)


def test_kappa_counts_a_missing_prediction_as_unparsed_and_is_nan_when_undefined():
    assert cohen_kappa(["a", "b"], ["a", None]) == pytest.approx(cohen_kappa_score(["a", "b"], ["a", UNPARSED]))
    assert math.isnan(cohen_kappa(["a", "a"], ["a", "a"]))
    with pytest.raises(ValueError):
        cohen_kappa(["a"], [])


# ---------------------------------------------------------------- a panel of scripted referees

TALK = re.compile(r"please make your talk short and clear, (.+?) !")
BASE = {GP: {"a": 8, "b": 6}, CRITIC: {"a": 6, "b": 7}}  # each referee's scores by answer
BIAS = {GP: 0, CRITIC: 2}  # ... and what it adds to the answer shown first


def first_shown(prompt: str) -> str:
    """Which answer the prompt shows as Assistant 1 (the items' answers say which they are)."""
    start = prompt.find("Assistant 1’s Answer]")
    return "b" if start != -1 and "ANSWER-B" in prompt[start:start + 60] else "a"


def history_of(prompt: str) -> list[str]:
    """The `[Name]: text` messages of a referee prompt's discussion history."""
    part = prompt.split("Here is your discuss history:\n", 1)[1].split("\n\nYou are", 1)[0]
    return re.split(r"\n(?=\[)", part) if part.strip() else []


def said(name: str, turn: int, first: str = "", scores: bool = False) -> str:
    """What a Referees referee says in a turn (with its scores, in the order `first` shows them)."""
    if not scores:
        return f"{name} speaks in turn {turn}."
    s = {k: v + (BIAS[name] if k == first else 0) for k, v in BASE[name].items()}
    second = "b" if first == "a" else "a"
    return (f"{name} speaks in turn {turn}.\nEvaluation evidence: fine.\nThe score of Assistant 1: {s[first]}\n"
            f"The score of Assistant 2: {s[second]}")


class Referees(ScriptedChatCompletionClient):
    """Every referee (and the summarizer) of a panel: a referee's turns are numbered per order it
    sees; its last turn writes the scores BASE and BIAS give it, in the code's format, unless
    `unreadable` names it; its scores asked after the reply are answered the same; a summary
    counts the lines it was given."""

    def __init__(self, unreadable: tuple[str, ...] = (), **kwargs):
        super().__init__(**kwargs)
        self.unreadable = unreadable
        self.turns: dict[tuple[str, str], int] = {}

    def scores(self, name: str, first: str) -> dict[str, float]:
        return {k: v + (BIAS[name] if k == first else 0) for k, v in BASE[name].items()}

    async def create(self, messages, *, tools=(), json_output=None, extra_create_args={}, cancellation_token=None):
        self.calls += 1
        self.requests.append({"messages": list(messages), "output": json_output,
                              "request": request_of(extra_create_args)})
        if self.calls in self.fail_calls:
            raise ConnectionError("scripted failure")
        prompt = str(messages[0].content)
        request = request_of(extra_create_args)
        if isinstance(request, Score) or json_output is not None:
            name, first = TALK.search(prompt).group(1), first_shown(prompt)
            asked = first if "Assistant 2" not in str(messages[-1].content) else "b" if first == "a" else "a"
            score = self.scores(name, first)[asked]
            if json_output is not None:
                return self.result(json.dumps({"answer": int(score)}))
            return answer(request, messages, [], None, None, score, 10)
        if prompt.startswith("Summarize the lines"):
            lines = prompt.split("New lines:\n", 1)[1].split("\n\nNew summary:")[0].splitlines()
            return self.result(f"A summary of {len(lines)} lines.")
        name, first = TALK.search(prompt).group(1), first_shown(prompt)
        turn = self.turns[(name, first)] = self.turns.get((name, first), 0) + 1
        final = "Output with the following format strictly" in prompt and name not in self.unreadable
        return self.result(said(name, turn, first, final))

    @staticmethod
    def result(text: str) -> CreateResult:
        return CreateResult(content=text, usage=RequestUsage(prompt_tokens=5, completion_tokens=5),
                            finish_reason="stop", cached=False)

    def prompts_of(self, name: str, first: str = "a") -> list[str]:
        """The referee's prompts in one order, in the order asked."""
        found = [str(r["messages"][0].content) for r in self.requests if r["request"] is None]
        return [p for p in found if TALK.search(p) and TALK.search(p).group(1) == name and first_shown(p) == first]


ITEM = {"question": "Which is better?", "response_a": "ANSWER-A: the first answer.",
        "response_b": "ANSWER-B: the second answer."}


def panel(tmp_path, client: Referees, **fields):
    scenario = ChatEvalScenario(protocol="chateval", models={"default": "scripted"}, **fields)
    return run_item("chateval", scenario, dict(ITEM), {"scripted": client}, tmp_path / "run", gold="a")


TURN_1 = [f"[{GP}]: {said(GP, 1)}", f"[{CRITIC}]: {said(CRITIC, 1)}"]


@pytest.mark.parametrize("strategy, histories", [
    ("one_by_one", {GP: lambda first: [[], TURN_1],
                    CRITIC: lambda first: [TURN_1[:1], [*TURN_1, f"[{GP}]: " + said(GP, 2, first, scores=True).replace("\n", "\n    ")]]}),
    ("simultaneous", {name: lambda first: [[], TURN_1] for name in (GP, CRITIC)}),
    ("simultaneous_summarizer", {name: lambda first: [[], [*TURN_1, "[Summarizer]: A summary of 2 lines."]]
                                 for name in (GP, CRITIC)}),
])
def test_each_strategy_end_to_end(tmp_path, strategy, histories):
    client = Referees()
    result, transcript = panel(tmp_path, client, strategy=strategy)
    assert result.status == "completed"
    for name, expected in histories.items():
        for first in ("a", "b"):
            prompts = client.prompts_of(name, first)
            assert [history_of(p) for p in prompts] == expected(first)
            assert "Output with the following format strictly" in prompts[-1]
            assert "Output with" not in prompts[0]
            assert f"You are now {name}, one of the referees" in prompts[0]
    shown = client.prompts_of(GP, "b")[0]
    assert shown.index("ANSWER-B") < shown.index("ANSWER-A")  # the swapped order shows B as Assistant 1
    judgements = transcript.of_type(Judgement)
    assert [(j.speaker, j.order, j.scores, j.preference) for j in judgements] == [
        (GP, "ab", {"a": 8, "b": 6}, "a"), (CRITIC, "ab", {"a": 8, "b": 7}, "a"),
        (GP, "ba", {"a": 8, "b": 6}, "a"), (CRITIC, "ba", {"a": 6, "b": 9}, "b")]
    assert all(j.parsed and j.method == "text" and j.raw is None for j in judgements)
    by_turn = {m.turn: m for m in transcript.messages}
    assert [by_turn[j.turn].speaker for j in judgements] == [GP, CRITIC, GP, CRITIC]
    assert [by_turn[j.turn].decision for j in judgements] == ["a", "a", "a", "b"]
    outcome = transcript.outcome
    assert (outcome.prediction, outcome.explanation) == ("a", "sums over 2 referee(s) x 2 order(s): a 30, b 28")
    summaries = [m for m in transcript.messages if m.role == SUMMARIZER]
    assert len(summaries) == (4 if strategy == "simultaneous_summarizer" else 0)
    assert [m.action for m in summaries] == ["ab:referee_1", "ab:referee_2", "ba:referee_1", "ba:referee_2"][
        :len(summaries)]


def test_a_summary_reads_the_referee_s_messages_in_the_code_s_lines(tmp_path):
    client = Referees()
    panel(tmp_path, client, strategy="simultaneous_summarizer", positions="given")
    summaries = [str(r["messages"][0].content) for r in client.requests
                 if str(r["messages"][0].content).startswith("Summarize")]
    assert len(summaries) == 2 and summaries[0] == summaries[1]  # one per referee, of the same memory here
    assert f"Current summary:\n\n\nNew lines:\n[{GP}] : {GP} speaks in turn 1.\n[{CRITIC}] : {CRITIC} speaks in " \
           f"turn 1.\n\n\nNew summary:" in summaries[0]


@pytest.mark.parametrize("positions, prediction, explanation", [
    ("both", "a", "a 30, b 28"), ("given", "a", "a 16, b 13"), ("swapped", "b", "a 14, b 15")])
def test_positions(tmp_path, positions, prediction, explanation):
    _, transcript = panel(tmp_path, Referees(), positions=positions)
    assert transcript.outcome.prediction == prediction and explanation in transcript.outcome.explanation
    orders = {"both": {"ab", "ba"}, "given": {"ab"}, "swapped": {"ba"}}[positions]
    assert {j.order for j in transcript.of_type(Judgement)} == orders


def test_an_unreadable_referee_is_unparsed_never_a_tie_and_later_referees_do_not_see_it(tmp_path):
    client = Referees(unreadable=(GP,))
    result, transcript = panel(tmp_path, client, strategy="one_by_one")
    gp = [j for j in transcript.of_type(Judgement) if j.speaker == GP]
    assert [(j.parsed, j.scores, j.preference) for j in gp] == [(False, {}, None)] * 2
    assert gp[0].raw == f"{GP} speaks in turn 2." and "does not end with" in gp[0].error
    assert transcript.outcome.prediction == UNPARSED
    assert transcript.outcome.explanation == f"2 of 4 judgements unreadable: {GP} (ab), {GP} (ba)"
    assert result.row(tmp_path)["unread"] == 2
    # the code drops a last-turn reply that failed its format: the Critic after it does not see it
    assert history_of(client.prompts_of(CRITIC)[-1]) == TURN_1


@pytest.mark.parametrize("choice", ["likelihood", "structured"])
def test_scores_asked_after_the_reply(tmp_path, choice):
    client = Referees(unreadable=(GP, CRITIC))  # the written lines are not read
    _, transcript = panel(tmp_path, client, choice=choice, positions="given")
    judgements = transcript.of_type(Judgement)
    assert [(j.speaker, j.scores) for j in judgements] == [(GP, {"a": 8, "b": 6}), (CRITIC, {"a": 8, "b": 7})]
    assert {j.method for j in judgements} == {"scripted" if choice == "likelihood" else "structured"}
    if choice == "likelihood":
        assert judgements[0].distributions["a"] == {"7": 0.25, "8": 0.5, "9": 0.25}
    asked = [r for r in client.requests if r["request"] is not None or r["output"] is not None]
    assert len(asked) == 4
    assert str(asked[0]["messages"][-1].content) == "Now output the score of Assistant 1 only, on a scale of 1 to 10."
    assert [type(m).__name__ for m in asked[0]["messages"]] == ["UserMessage", "AssistantMessage", "UserMessage"]
    assert transcript.outcome.prediction == "a"
    scored = [c for c in transcript.calls if c.stage == "ab score"]
    assert len(scored) == 4 and not any(m.action == "ab score" for m in transcript.messages)


def test_the_scores_task(tmp_path):
    client = Referees()
    scenario = ChatEvalScenario(protocol="chateval", task="scores", positions="given", choice="likelihood",
                                models={"default": "scripted"})
    result, transcript = run_item("chateval", scenario, {"question": "Q?", "response_a": "ANSWER-A: x"},
                                  {"scripted": client}, tmp_path / "run")
    prompt = client.prompts_of(GP)[0]
    assert "[The Start of the Assistant’s Answer]\nANSWER-A: x" in prompt and "Assistant 2" not in prompt
    assert [(j.order, j.scores) for j in transcript.of_type(Judgement)] == [("panel", {"a": 8}), ("panel", {"a": 8})]
    assert transcript.outcome is None and result.row(tmp_path)["score"] == 8.0


# ---------------------------------------------------------------- a base model's document

def test_a_base_model_continues_the_panel_s_document(tmp_path):
    client = ScriptedChatCompletionClient(["BASE"], score=6)
    scenario = ChatEvalScenario(protocol="chateval", strategy="simultaneous", positions="given",
                                models={"default": "scripted"})  # choice auto: by likelihood on a base model
    _, transcript = run_item("chateval", scenario, dict(ITEM), {"scripted": client}, tmp_path / "run")
    asked = [(r["request"], str(r["messages"][-1].content)) for r in client.requests]
    turns = [(q, d) for q, d in asked if q.kind == "continue"]
    assert [q.prefix for q, _ in turns] == [f"{GP}:", f"{CRITIC}:"] * 2
    first, critic_first, _, critic_last = (d for _, d in turns)
    assert first.startswith("Transcript of a referee panel. 2 referees read a user's question and the answers of two "
                            "AI assistants") and f"{CRITIC} is a critic who checks" in first
    assert "Question: Which is better?\n\nAssistant 1's answer: ANSWER-A" in first
    assert first.endswith("[Turn 1 of 2: the referees discuss the answers.]")
    assert critic_first == first  # simultaneous: the Critic does not see General Public's turn 1
    assert f"\n\n{GP}: (scripted)" in critic_last and critic_last.endswith(
        "[Turn 2 of 2: each referee explains their evaluation and scores the assistants.]")
    scores = [(q, d) for q, d in asked if q.kind == "score"]
    assert sorted(q.prefix for q, _ in scores) == [f"{CRITIC}: The score of Assistant 1:",
                                                   f"{CRITIC}: The score of Assistant 2:",
                                                   f"{GP}: The score of Assistant 1:", f"{GP}: The score of Assistant 2:"]
    assert [d for q, d in scores if q.prefix.startswith(GP)][0].startswith(critic_last)  # after the last turn ...
    assert f"\n\n{GP}: (scripted)" in [d for q, d in scores if q.prefix.startswith(GP)][0][len(critic_last):]
    assert all(q.document for q, _ in scores)
    assert [j.scores for j in transcript.of_type(Judgement)] == [{"a": 6, "b": 6}] * 2
    assert transcript.outcome.prediction == "tie"


# ---------------------------------------------------------------- runs, the report, the specs

def write_pairs(tmp_path: Path) -> Path:
    rows = [("p1", "a"), ("p2", "b"), ("p3", "tie")]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(
        {"qid": i, "q": f"Question {i}?", "first": f"ANSWER-A for {i}", "second": f"ANSWER-B for {i}", "human": g})
        + "\n" for i, g in rows), encoding="utf-8")
    spec = tmp_path / "pairs.yaml"
    spec.write_text("path: pairs.jsonl\nformat: jsonl\ncolumns: {id: qid, question: q, response_a: first, "
                    "response_b: second, label: human}\nlabels: {a: a, b: b, tie: tie}\nmetric: accuracy\n")
    return spec


def test_a_dataset_run_and_its_report(tmp_path, capsys):
    out = tmp_path / "run"
    code = run_scenario(ROOT / "scenarios" / "chateval.yaml", out, clients={"scripted": Referees()},
                        extra=["--dataset", str(write_pairs(tmp_path))])
    assert code == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["prediction"], r["gold"]) for r in rows] == [("a", "a"), ("a", "b"), ("a", "tie")]
    assert rows[0]["sums"] == {"a": 30.0, "b": 28.0} and rows[0]["orders"] == {"ab": "a", "ba": "b"}
    capsys.readouterr()
    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 0
    printed = capsys.readouterr().out
    assert "cf. ChatEval Table 1" in printed
    with open(tmp_path / "report" / "table.csv", encoding="utf-8") as f:
        [row] = list(csv.DictReader(f))
    kappa = cohen_kappa_score(["a", "b", "tie"], ["a", "a", "a"])
    assert row["variant_model"] == "ChatEval one_by_one, 2 referees x 2 turns, both order(s) · scripted"
    assert (row["pairs (accuracy)"], row["pairs (kappa)"], row["unparsed"]) == ("0.3333", f"{kappa:.4f}", "0/3")


def test_the_report_counts_unparsed_items(tmp_path, capsys):
    out = tmp_path / "run"
    assert run_scenario(ROOT / "scenarios" / "chateval.yaml", out, clients={"scripted": Referees(unreadable=(CRITIC,))},
                        extra=["--dataset", str(write_pairs(tmp_path))]) == EXIT_UNPARSED  # every answer unparsed
    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 0
    with open(tmp_path / "report" / "table.csv", encoding="utf-8") as f:
        [row] = list(csv.DictReader(f))
    assert (row["pairs (accuracy)"], row["unparsed"]) == ("0.0000", "3/3")
    assert float(row["pairs (kappa)"]) == pytest.approx(cohen_kappa_score(["a", "b", "tie"], [UNPARSED] * 3))


def test_the_demo_spec_maps_the_labels_and_runs(tmp_path, capsys):
    spec = load_dataset_spec(ROOT / "datasets" / "demo-preference.yaml", PROTOCOL.input_names())
    assert spec.labels == {"A": "a", "B": "b", "tie": "tie"} and spec.metric == "accuracy"
    out = tmp_path / "run"
    assert run_scenario(ROOT / "scenarios" / "chateval.yaml", out,
                        extra=["--dataset", str(ROOT / "datasets" / "demo-preference.yaml"), "--limit", "2"]) == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["id"], r["gold"]) for r in rows] == [("preference-01", "a"), ("preference-02", "b")]
    # the scripted referees write the scores ChatEval declares: every judgement read, a preference each
    assert all(r["prediction"] in ("a", "b", "tie") and r["unread"] == 0 for r in rows)


def test_faireval_s_spec_says_where_its_file_is_published(tmp_path):
    text = (ROOT / "datasets" / "faireval.yaml").read_text()
    with pytest.raises(DatasetError) as info:
        load_dataset_spec(ROOT / "datasets" / "faireval.yaml", PROTOCOL.input_names())
    assert "file not found" in str(info.value) and "(published at github.com/thunlp/ChatEval, commit 386e732" in str(
        info.value)
    assert len(str(info.value).splitlines()) == 1
    rows = [{"question_id": 0, "question": "Q?", "category": "generic", "human_results": "gpt35",
             "response": {"gpt4": "x", "gpt35": "ANSWER-A", "vicuna": "ANSWER-B", "alpaca": "y"}}]
    (tmp_path / "faireval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "faireval.yaml").write_text(re.sub(r"(?m)^path: .*$", "path: faireval.jsonl", text))
    out = tmp_path / "run"
    assert run_scenario(ROOT / "scenarios" / "chateval.yaml", out, clients={"scripted": Referees()},
                        extra=["--dataset", str(tmp_path / "faireval.yaml")]) == 0
    [row] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert (row["id"], row["gold"], row["prediction"]) == ("0", "a", "a")


def test_a_unit_cut_short_continues_without_repeating_a_call_or_a_judgement(tmp_path):
    out, spec = tmp_path / "run", write_pairs(tmp_path)
    extra = ["--dataset", str(spec), "--limit", "1", "--no-cache"]
    broken = Referees(fail_calls=[7])  # the swapped order's second call: the first order's judgements are in
    path = tmp_path / "s.yaml"
    path.write_text((ROOT / "scenarios" / "chateval.yaml").read_text() + "retry: {attempts: 1, backoff_s: 0}\n")
    assert run_scenario(path, out, clients={"scripted": broken}, extra=extra) != 0
    before = load(out / "p1.jsonl")
    assert len(before.of_type(Judgement)) == 2 and before.finished.status == "failed"
    again = Referees()
    assert run_scenario(path, out, clients={"scripted": again}, extra=extra) == 0
    after = load(out / "p1.jsonl")
    assert again.calls == 8 - 6  # the six calls recorded are served from the log
    assert [j.turn for j in after.of_type(Judgement)] == sorted({j.turn for j in after.of_type(Judgement)})
    assert len(after.of_type(Judgement)) == 4 and len(after.messages) == 8
    assert after.outcome.prediction == "a"


# ---------------------------------------------------------------- the scenario and the contract

def test_the_protocol_keeps_the_contract_and_its_example_loads():
    check(PROTOCOL)
    assert REGISTRY.get("chateval") is PROTOCOL
    scenario = load_scenario(ROOT / "scenarios" / "chateval.yaml")
    assert [r.name for r in scenario.referees] == [GP, CRITIC]
    assert (scenario.strategy, scenario.turns, scenario.positions, scenario.labels) == (
        "one_by_one", 2, "both", ["a", "b", "tie"])
    assert scenario.referees[1].persona == ChatEvalScenario(protocol="chateval").referees[1].persona
    assert [k.name for k in PROTOCOL.vary] == ["seed", "model", "strategy", "turns"]
    assert PROTOCOL.vary[2].apply({}, "simultaneous") == {"strategy": "simultaneous"}


@pytest.mark.parametrize("extra, message", [
    ("strategy: simultaneous_summarizer\nturns: 1", "turns: simultaneous_summarizer needs turns >= 2"),
    ("task: scores", "positions: task scores has one answer"),
    ("referees: [{name: A, persona: x}, {name: a, persona: y}]", "referees: referees must be distinct"),
    ("referees: [{name: Summarizer, persona: x}]", "the summarizer's name"),
    ("models: {referee_3: local}", "models.referee_3: unknown role"),
    ("models: {summarizer: local}", "models.summarizer: unknown role"),
    ("prompts: {prompt: 'see $answers'}", "prompts.prompt: unknown placeholder $answers"),
    ("strategy: round_robin", "strategy"),
])
def test_bad_scenarios_name_the_key(tmp_path, extra, message):
    path = tmp_path / "bad.yaml"
    path.write_text(f"protocol: chateval\n{extra}\n", encoding="utf-8")
    with pytest.raises(Exception) as caught:
        load_scenario(path)
    assert message in str(caught.value)


def test_a_run_reads_on_a_terminal_and_in_a_document(tmp_path, capsys):
    out = tmp_path / "run"
    assert run_scenario(ROOT / "scenarios" / "chateval.yaml", out, clients={"scripted": Referees()},
                        extra=["--input", "response_a=ANSWER-A here", "--input", "response_b=ANSWER-B there"]) == 0
    capsys.readouterr()
    [transcript] = out.glob("item-*.jsonl")
    assert main(["replay", str(transcript), "--no-delay"]) == 0
    shown = capsys.readouterr().out
    assert "=== Answer B as Assistant 1, answer A as Assistant 2 (swapped) ===" in shown
    assert f"scores of {CRITIC}: a 6, b 9 -> b" in shown and "[BA T2] Critic" in shown
    assert main(["export", str(out), "--format", "md", "--out", str(tmp_path / "run.md")]) == 0
    document = (tmp_path / "run.md").read_text()
    assert "| General Public | referee_1 | scripted |" in document  # its model, found by its role (Markdown
    assert "**Prefers: `b`** — answer a: 6, answer b: 9" in document  # escapes only what would render otherwise)


def test_a_unit_killed_between_a_last_turn_and_its_judgement_records_the_judgement_once(tmp_path):
    """The transcript as a kill leaves it right after a referee's last message: the rerun serves
    every recorded call from the log and records the missing judgement, once."""
    out, spec = tmp_path / "run", write_pairs(tmp_path)
    extra = ["--dataset", str(spec), "--limit", "1", "--no-cache"]
    assert run_scenario(ROOT / "scenarios" / "chateval.yaml", out, clients={"scripted": Referees()}, extra=extra) == 0
    transcript = out / "p1.jsonl"
    lines = transcript.read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "judgement")
    transcript.write_text("".join(lines[:first]))  # killed before the judgement was written
    (out / "results.jsonl").write_text("")
    again = Referees()
    assert run_scenario(ROOT / "scenarios" / "chateval.yaml", out, clients={"scripted": again}, extra=extra) == 0
    after = load(transcript)
    assert again.calls == 8 - 3  # General Public's last turn (the third call) was recorded
    judgements = after.of_type(Judgement)
    assert len(judgements) == 4 and len({j.turn for j in judgements}) == 4
    assert after.outcome.prediction == "a"
