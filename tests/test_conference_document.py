"""Conferences of base models (`scripted:BASE`): one shared transcript document continued turn by
turn, closed answers read by likelihood (the judge's verdict against the threshold, the deciding
moderator's decision, the evaluator's expected scores with a separate rationale), what is recorded
and how a cut short run continues."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from run_support import conference, run_scenario

from moot.contract.registry import view_of
from moot.cli import EXIT_OK, main
from moot.log.events import Message, RunResumed
from moot.protocols.conference.events import Score, TopicClosed, Verdict
from moot.models.requests import Choose, Continue, NotSupported, Score as ScoreRequest
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.scenario.load import ScenarioError, load_scenario
from moot.log.transcript import load
from moot.protocols.conference.verdicts import CRITERIA

M, A, B, J, E = "Moderator", "Alice", "Bob", "Judge", "Evaluator"
LABELS = "    label: Dr. Alice\n"


def base_scenario(make_scenario, extra: str = "", topics: int = 1, judge: bool = True, **kwargs) -> Path:
    """The conftest scenario with labels for Alice (`Dr. Alice`) and closed answers by likelihood."""
    path = make_scenario(topics=topics, judge=judge, extra="choice: likelihood\n" + extra, **kwargs)
    text = path.read_text().replace("  - name: Alice\n", "  - name: Alice\n" + LABELS, 1)
    path.write_text(text)
    return path


def base_clients(judge=(), **others) -> dict:
    made = {name: ScriptedChatCompletionClient(["BASE"]) for name in (M, A, B, E)}
    made[J] = ScriptedChatCompletionClient(["BASE", *judge])
    return {**made, **others}


def run(path: Path, out: Path, clients: dict):
    assert run_scenario(path, out, clients=clients) == EXIT_OK
    return conference(out)


def requests_of(client, kind=None) -> list:
    return [r for r in client.requests if kind is None or type(r["request"]).__name__ == kind]


def document(request) -> str:
    return request["messages"][0].content


def test_every_free_text_turn_continues_one_shared_growing_document(make_scenario, tmp_path):
    made = base_clients(judge=["MORE_DEBATE", "AGREEMENT"])
    t = run(base_scenario(make_scenario, "agreement_threshold: 0.6\n"), tmp_path / "run", made)
    turns = sorted((r for name in (M, A, B) for r in requests_of(made[name], "Continue")),
                   key=lambda r: len(document(r)))
    docs = [document(r) for r in turns]
    assert len(docs) == 7  # open, Alice, Bob, continue, Alice, Bob, close
    assert all(later.startswith(earlier) for earlier, later in zip(docs, docs[1:]))  # one document, growing
    header = docs[0].split("\n\n")[0]
    assert header.startswith("Verbatim transcript of a decision conference. Title: Test conference. "
                             "The group's task: Decide the test questions. Dr. Alice is Alice the tester. "
                             "Bob is Bob the tester. The agenda: (1) topic number 1.")
    assert "\n" not in header and "You are" not in docs[-1] and "Answer as JSON" not in docs[-1]
    first = turns[0]["request"]
    assert isinstance(first, Continue) and first.document and first.prefix == "Moderator:"
    assert docs[0].endswith("[Topic 1 of 1: topic number 1. The moderator introduces the topic and asks "
                            "the participants a question.]")
    alice = requests_of(made[A], "Continue")[0]["request"]
    assert alice.prefix == "Dr. Alice:" and alice.min_tokens == 20 and alice.no_repeat_ngram == 7
    assert {"\n\n", "[", "\nBob", "Bob:", "\nDr. Alice", "Dr. Alice:", "Alice:", "\nJudge", "Judge:"} <= set(alice.stop)
    assert {"Dr. Alice", "Bob", "Moderator", "(", '"'} <= set(alice.ban_first)
    assert alice.reference == document(requests_of(made[A], "Continue")[0])  # no copying from the document
    said = [m for m in t.of_type(Message) if m.action in ("open", "speak", "continue", "close")]
    for message in said[:-1]:  # every line is in the documents that follow it, under its label
        label = "Dr. Alice" if message.speaker == A else message.speaker
        assert f"\n\n{label}: {message.content}\n\n" in docs[-1]
    assert "[No agreement yet on topic 1. Round 2 of at most 3 begins.]" in docs[-1]
    assert docs[-1].endswith("[The participants agree on topic 1.]\n\n[All topics have been discussed. "
                             "The moderator closes the conference.]")


def test_judge_by_likelihood_against_the_threshold(make_scenario, tmp_path):
    # the scripted judge gives its scripted option p=0.7: AGREEMENT only when the threshold allows it
    strict = run(base_scenario(make_scenario, "agreement_threshold: 0.8\n", max_rounds=2),
                 tmp_path / "strict", base_clients(judge=["AGREEMENT", "AGREEMENT"]))
    verdicts = strict.of_type(Verdict)
    assert [v.verdict for v in verdicts] == ["MORE_DEBATE", "MORE_DEBATE"]
    assert (verdicts[0].method, verdicts[0].probabilities, verdicts[0].threshold) == (
        "scripted", {"agree": 0.7, "disagree": 0.3}, 0.8)
    assert verdicts[0].reason == "p(agree)=0.70 < 0.80 (measured: scripted)"
    assert [(c.rounds, c.closed_by) for c in strict.of_type(TopicClosed)] == [(2, "round_cap")]
    loose = run(base_scenario(make_scenario, "agreement_threshold: 0.6\n"), tmp_path / "loose",
                made := base_clients(judge=["AGREEMENT"]))
    verdict = loose.of_type(Verdict)[0]
    assert (verdict.verdict, verdict.reason) == ("AGREEMENT", "p(agree)=0.70 >= 0.60 (measured: scripted)")
    judge = next(m for m in loose.of_type(Message) if m.action == "judge")
    assert judge.content == "AGREEMENT" and judge.decision == "AGREEMENT"
    assert judge.measured.probabilities == {"agree": 0.7, "disagree": 0.3} and judge.measured.threshold == 0.6
    asked = made[J].requests[0]["request"]
    assert isinstance(asked, Choose) and asked.options == ("agree", "disagree")
    assert asked.prefix == "Judge: Having heard both, I find that Dr. Alice and Bob" and asked.document
    call = next(c for c in loose.calls if c.role == J)
    assert call.kind == "choice" and call.detail.probabilities == {"agree": 0.7, "disagree": 0.3}


def test_evaluator_expected_scores_and_a_separate_rationale(make_scenario, tmp_path):
    made = base_clients(judge=["AGREEMENT"])
    t = run(base_scenario(make_scenario, "agreement_threshold: 0.6\n"), tmp_path / "run", made)
    scores = requests_of(made[E], "Score")
    assert len(scores) == 11 and len(requests_of(made[E], "Continue")) == 1
    assert scores[0]["request"].prefix == ("[Evaluation of the discussion of topic 1, each criterion from 1 = very "
                                           "poor to 10 = excellent.]\nClarity: How clear is the exchange? Are the "
                                           "statements and responses easy to understand?\nScore (1-10):")
    assert scores[-1]["request"].prefix.endswith("Overall: How good is the discussion as a whole?\nScore (1-10):")
    rationale = requests_of(made[E], "Continue")[0]
    assert document(rationale).endswith("[The evaluator sums up the discussion of topic 1 in a few sentences.]")
    assert rationale["request"].prefix == "Evaluator:"
    score = t.of_type(Score)[0]
    assert score.method == "scripted" and score.scores == {c: 7.0 for c in CRITERIA} and score.overall == 7.0
    assert score.distributions["clarity"] == {"6": 0.25, "7": 0.5, "8": 0.25} and set(score.distributions) == {
        *CRITERIA, "overall"}
    assert score.rationale.startswith("(scripted) I have a point on")  # prose, not a grammar's JSON
    evaluator = next(m for m in t.of_type(Message) if m.action == "evaluate")
    assert json.loads(evaluator.content)["rationale"] == score.rationale and evaluator.calls == 12
    assert [c.kind for c in t.calls if c.role == E] == ["score"] * 11 + ["continue"]


def test_without_judge_the_moderator_decides_by_likelihood_and_then_speaks(make_scenario, tmp_path):
    made = base_clients()
    made[M] = ScriptedChatCompletionClient(["BASE", "MORE_DEBATE", "NEXT_TOPIC"])
    t = run(base_scenario(make_scenario, "agreement_threshold: 0.6\n", judge=False), tmp_path / "run", made)
    decides = [m for m in t.of_type(Message) if m.action == "decide"]
    assert [m.decision for m in decides] == ["MORE_DEBATE", "NEXT_TOPIC"]
    assert json.loads(decides[0].content)["message"].startswith("(scripted)")
    assert decides[1].measured.probabilities == {"move": 0.7, "continue": 0.3}
    asked = requests_of(made[M], "Choose")
    assert asked[0]["request"].prefix == "Moderator: Having heard both on this topic, I think we should"
    spoken = [document(r) for r in requests_of(made[M], "Continue")]
    assert spoken[1].endswith("[The moderator finds that topic 1 needs more debate and asks the participants "
                              "to continue.]")
    assert spoken[2].endswith("[The moderator finds that the participants agree on topic 1 and sums it up.]")
    assert [v.verdict for v in t.of_type(Verdict)] == ["MORE_DEBATE", "NEXT_TOPIC"]


def test_an_instruction_model_keeps_the_chat_path_and_is_scored_after_its_reply_begins(make_scenario, tmp_path):
    made = {name: ScriptedChatCompletionClient() for name in (M, A, B, E)}
    made[J] = ScriptedChatCompletionClient(["AGREEMENT"])
    t = run(base_scenario(make_scenario, "agreement_threshold: 0.6\n"), tmp_path / "run", made)
    assert all(r["request"] is None for r in made[A].requests)  # plain chat turns
    assert made[A].requests[0]["messages"][0].content.startswith("You are Dr. Alice, a participant")
    assert "\n\nDr. Alice: " in made[B].requests[0]["messages"][-1].content  # the others call Alice by her label
    asked = made[J].requests[0]["request"]
    assert asked.options == ("AGREEMENT", "MORE_DEBATE") and asked.reply_prefix == '{"verdict": "'
    assert not asked.document and t.of_type(Verdict)[0].verdict == "AGREEMENT"
    criteria = requests_of(made[E], "Score")
    assert len(criteria) == 11 and criteria[0]["request"].reply_prefix == ""
    assert criteria[0]["messages"][-1].content.endswith(
        'Score the debate on "topic number 1" above for one criterion, Clarity: How clear is the exchange? Are '
        'the statements and responses easy to understand?\nAnswer with one integer from 1 (very poor) to 10 '
        '(excellent) and nothing else.')
    rationale = [r for r in made[E].requests if r["request"] is None]
    assert len(rationale) == 1 and "two or three sentences" in rationale[0]["messages"][-1].content


class Unmeasured(ScriptedChatCompletionClient):
    """A backend without log-probabilities: closed choices and scores are not supported."""

    def _answer(self, messages, request, extra):
        if request.kind in ("choice", "score"):
            raise NotSupported("no log-probabilities here")
        return super()._answer(messages, request, extra)


def test_a_backend_that_cannot_measure_answers_in_structured_output_and_says_so(make_scenario, tmp_path):
    made = base_clients()
    made[J] = Unmeasured(["BASE"])
    made[E] = Unmeasured(["BASE"], score=6)
    t = run(base_scenario(make_scenario), tmp_path / "run", made)
    verdict = t.of_type(Verdict)[0]
    assert verdict.method == "structured" and verdict.probabilities == {} and verdict.verdict == "AGREEMENT"
    assert verdict.reason.startswith("answered in structured output: choice not available from this backend")
    score = t.of_type(Score)[0]  # the scripted structured answer: its score, an allowed one
    assert score.method == "structured" and score.distributions == {} and score.scores == {c: 6.0 for c in CRITERIA}


def test_transcripts_written_with_integer_scores_load_and_read_as_integers(make_scenario, tmp_path):
    from moot.views.html import render_html
    from moot.protocols.conference.texts import score_line

    out = tmp_path / "run"
    assert run_scenario(make_scenario(topics=1), out) == EXIT_OK  # the written (structured) evaluator
    path = out / "conference.jsonl"
    old = []  # as moot wrote scores before they were floats: integers, no method or distributions
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if event["type"] == "run_started":
            event["versions"] = {}  # the page lists them: a version such as 3.57.0 must not read as a score
        if event["type"] == "score":
            event = {k: v for k, v in event.items() if k not in ("method", "distributions")}
            event["scores"] = {k: int(v) for k, v in event["scores"].items()}
            event["overall"] = int(event["overall"])
        old.append(json.dumps(event))
    path.write_text("\n".join(old) + "\n")
    assert '"clarity": 7,' in path.read_text() or '"clarity":7,' in path.read_text()
    score = load(path).of_type(Score)[0]
    assert score.scores["clarity"] == 7 and score.method == ""
    assert score_line(score).startswith("Evaluator scores: overall=7 | clarity=7 relevance=7")
    page = render_html([loaded := load(path)], [view_of(loaded.started)])
    chart = page[page.index('<figure class="scores">'):page.index("</figure>")]  # not the clock's 47.019 elsewhere
    assert "overall <strong>7</strong>/10" in chart and "7.0" not in chart and ">7</text>" in chart


def test_labels_are_checked(make_scenario, tmp_path):
    path = make_scenario(extra="")
    text = path.read_text()
    (tmp_path / "a.yaml").write_text(text.replace("  - name: Bob\n", "  - name: Bob\n    label: Alice\n"))
    with pytest.raises(ScenarioError, match=r"participants\[1\]\.label: 'Alice' would call two agents the same"):
        load_scenario(tmp_path / "a.yaml")
    (tmp_path / "b.yaml").write_text(text.replace("  - name: Bob\n", "  - name: Bob\n    label: 'Bob: the tester'\n"))
    with pytest.raises(ScenarioError, match=r"participants\[1\]\.label"):
        load_scenario(tmp_path / "b.yaml")


def test_a_turn_cut_at_its_last_sentence_says_so(make_scenario, tmp_path):
    made = base_clients(judge=["AGREEMENT"], Moderator=ScriptedChatCompletionClient(["BASE"], max_tokens=20))
    t = run(base_scenario(make_scenario, "agreement_threshold: 0.6\n"), tmp_path / "run", made)
    opened = next(m for m in t.of_type(Message) if m.action == "open")
    assert opened.cut and opened.content.endswith(".") and "second sentence" not in opened.content
    call = next(c for c in t.calls if c.role == M)
    assert call.detail.cut and call.detail.uncut.startswith(opened.content) and len(call.detail.uncut) > len(opened.content)


# ---------------------------------------------------------------- resuming a cut short run
@pytest.fixture(scope="module")
def measured_run(tmp_path_factory):
    """A whole base-model conference by likelihood (2 topics, each to the round cap: the scripted
    judge's p(agree) 0.7 is below the threshold, however often the run restarts) and its scenario."""
    folder = tmp_path_factory.mktemp("measured")
    lines = ["title: T", "task: Do.", "topics:", "  - one", "  - two", "moderator:", "  name: Moderator",
             "participants:", "  - name: Alice", "    label: Dr. Alice", "  - name: Bob", "judge:", "  name: Judge",
             "evaluator:", "  name: Evaluator", "models:", "  default: scripted:BASE",
             "choice: likelihood", "limits:", "  max_rounds_per_topic: 2"]
    scenario = folder / "s.yaml"
    scenario.write_text("\n".join(lines) + "\n")
    out = folder / "full"
    assert main([str(scenario), "--out", str(out), "--quiet"]) == EXIT_OK
    return scenario, out


def signature(path: Path) -> tuple:
    t = load(path)
    return ([(m.turn, m.speaker, m.action, m.decision, m.content, m.cut) for m in t.of_type(Message)],
            [(v.turn, v.verdict, v.probabilities, v.reason) for v in t.of_type(Verdict)],
            [(s.turn, s.scores, s.distributions, s.rationale) for s in t.of_type(Score)])


def test_a_measured_conference_killed_after_any_line_resumes_to_the_same_run(measured_run, tmp_path):
    scenario, full = measured_run
    data = (full / "conference.jsonl").read_bytes()
    expected = signature(full / "conference.jsonl")
    assert [v[1] for v in expected[1]] == ["MORE_DEBATE"] * 4
    ends = [i + 1 for i, b in enumerate(data) if b == ord("\n")][1:-1]
    for end in ends + [e - 7 for e in ends]:
        folder = tmp_path / f"cut{end}"
        folder.mkdir()
        shutil.copy(full / "run.json", folder / "run.json")
        (folder / "conference.jsonl").write_bytes(data[:end])
        assert main([str(scenario), "--out", str(folder), "--quiet"]) == EXIT_OK, end
        assert signature(folder / "conference.jsonl") == expected, end
        resumed = load(folder / "conference.jsonl")
        assert len(resumed.of_type(RunResumed)) == 1
        keys = [c.key for c in resumed.calls]
        assert len(keys) == len(set(keys)) == len(load(full / "conference.jsonl").calls), end


# ---------------------------------------------------------------- the embedded model (slow)
EMBEDDED = """\
title: Find a new approach to formulating and appraising drug policy
task: Formulate and appraise drug policy with a multi-criterion decision analysis.
topics:
  - develop a set of criteria for assessing drug policy outcomes
moderator:
  name: Moderator
  persona: An experienced decision-conference facilitator who stays neutral.
participants:
  - name: Participant_1
    label: Dr. Weber
    persona: A public-health researcher focused on health outcomes, prevention and treatment.
  - name: Participant_2
    label: Prof. Okafor
    persona: A criminologist and human-rights lawyer focused on justice, civil liberties and social costs.
judge:
  name: Judge
evaluator:
  name: Evaluator
generation: {temperature: 0.7, max_tokens: 120, seed: 7, top_p: 0.95, repeat_penalty: 1.1}
limits: {max_rounds_per_topic: 1}
"""


@pytest.mark.slow
def test_the_embedded_model_continues_the_transcript_and_is_measured(tmp_path):
    from moot.agents.conference.document import TranscriptDocument
    from moot.models.continuation import ends_sentence
    from moot.protocols.conference.setup import setup_of

    path = tmp_path / "s.yaml"
    path.write_text(EMBEDDED)
    out = tmp_path / "run"
    assert main([str(path), "--out", str(out), "--quiet"]) == EXIT_OK
    t = conference(out)
    spoken = [m for m in t.of_type(Message) if m.action in ("open", "speak", "close")]
    header = TranscriptDocument(setup_of(load_scenario(path))).header().lower().split()
    recited = {tuple(header[i:i + 8]) for i in range(len(header) - 7)}
    for m in spoken:
        assert m.content and ends_sentence(m.content), m.content
        said = m.content.lower().split()
        assert not {tuple(said[i:i + 8]) for i in range(len(said) - 7)} & recited, m.content
        for line in m.content.splitlines():
            assert not line.lstrip(" *").startswith(("Dr. Weber:", "Prof. Okafor:", "Moderator:", "Judge:")), m.content
    verdict = t.of_type(Verdict)[0]
    assert verdict.method == "likelihood" and verdict.threshold == 0.8
    assert set(verdict.probabilities) == {"agree", "disagree"}
    assert sum(verdict.probabilities.values()) == pytest.approx(1, abs=0.01)
    score = t.of_type(Score)[0]
    assert score.method == "likelihood" and score.rationale.strip()
    assert all(1 <= v <= 10 for v in score.scores.values()) and 1 <= score.overall <= 10
    assert all(sum(d.values()) == pytest.approx(1, abs=0.01) for d in score.distributions.values())
    turns = [c for c in t.calls if c.kind == "continue"]
    # The first turn evaluates what the model's cache lacks (the model is shared within a process:
    # an earlier test may have left its BOS); the next turns reuse the shared document.
    assert all(0 <= c.detail.evaluated <= c.usage.prompt_tokens for c in turns)
    assert all(c.detail.evaluated < 40 < c.usage.prompt_tokens for c in turns[1:3])  # the next reuse it
