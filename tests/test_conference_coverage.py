"""Reference outcomes (Heller et al. §5.2.2, automated): what the assessor is shown, how its answer
is checked against the debate, the coverage events, resume around the assessor's turn, and the
report that puts runs with and without the judge side by side."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from run_support import conference, run_scenario

from moot.agents.conference.context import Said
from autogen_core.models import RequestUsage

from moot.agents.conference.coverage import coverage_event, find_quote
from moot.cli import main
from moot.log.events import Message, RunResumed
from moot.protocols.conference.events import Coverage, Score, TopicClosed, Verdict
from moot.models.requests import Continue, MeasuredResult
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.protocols.conference.schema import ReferenceItem
from moot.scenario.load import ScenarioError, load_scenario
from moot.protocols.conference.texts import coverage_rows
from moot.log.transcript import load

M, A, B, J, E, X = "Moderator", "Alice", "Bob", "Judge", "Evaluator", "Assessor"
REFERENCE = """\
assessor:
  name: Assessor
reference_outcomes:
  - topic: 1
    source: a test
    items:
      - name: health
        description: effects on health
      - name: crime
      - name: public
        description: public implications
"""
ITEMS = [ReferenceItem(name="health", description="effects on health"), ReferenceItem(name="crime"),
         ReferenceItem(name="public", description="public implications")]
DEBATE = [Said(A, "Health outcomes matter most. Overdoses kill.", "speak", 0, 1, 2),
          Said(B, "Crime follows prohibition, as the “war on drugs” shows.", "speak", 0, 1, 3)]


def answer(**items) -> str:
    return json.dumps({name: {"evidence": quote, "covered": covered} for name, (quote, covered) in items.items()})


# ---------------------------------------------------------------- checking the assessor's answer

@pytest.mark.parametrize("quote, turn", [
    ("Health outcomes matter most.", 2),
    ("  health   OUTCOMES matter most ", 2),  # case and spacing
    ('"Overdoses kill"', 2),  # quoted, without the final stop
    ('the "war on drugs" shows', 3),  # typographic quotes in the debate
    ("Crime follows ... drugs” shows", 3),  # shortened with "...", in order within one turn
    ("Crime follows … prohibition", 3),
    ("shows ... Crime follows", None),  # out of order
    ("Health outcomes matter most. Crime follows", None),  # across two turns
    ("Health is everything", None),
    ("...", None),
    ("", None),
])
def test_a_quote_must_occur_in_a_participant_turn(quote, turn):
    assert find_quote(quote, DEBATE) == turn


def test_each_item_is_covered_only_with_a_quote_found_in_the_debate():
    reply = answer(health=("Health outcomes matter most.", True), crime=("", True), public=("public safety", True))
    event = coverage_event(reply, ITEMS, DEBATE, turn=9, speaker=X, topic=0, model="m")
    assert [(i.name, i.status, i.turn, i.error) for i in event.items] == [
        ("health", "covered", 2, None), ("crime", "unverified", None, "said covered, without a quote"),
        ("public", "unverified", None, "the quote is not in the participants' turns")]
    assert (event.covered, event.total, event.fraction, event.raw) == (1, 3, 0.3333, reply)  # raw kept: doubtful
    assert (event.turn, event.speaker, event.topic, event.model, event.error) == (9, X, 0, "m", None)


def test_a_one_word_quote_is_no_evidence():
    reply = answer(health=("Health", True), crime=("Crime follows", True), public=("", False))
    event = coverage_event(reply, ITEMS, DEBATE, turn=9, speaker=X, topic=0)
    assert [(i.status, i.error) for i in event.items] == [
        ("unverified", "a quote of fewer than 2 words is no evidence"), ("covered", None), ("not_covered", None)]


def test_not_covered_and_a_clean_answer_keeps_no_raw():
    reply = answer(health=("Overdoses kill.", True), crime=("Crime follows prohibition", True), public=("", False))
    event = coverage_event(reply, ITEMS, DEBATE, turn=9, speaker=X, topic=0)
    assert [(i.name, i.status) for i in event.items] == [("health", "covered"), ("crime", "covered"),
                                                          ("public", "not_covered")]
    assert (event.covered, event.fraction, event.raw, event.error) == (2, 0.6667, None, None)


@pytest.mark.parametrize("reply, statuses, error", [
    ("I think they covered health.", ["unparsed"] * 3, "not JSON"),
    (answer(health=("Overdoses kill", True)), ["covered", "unparsed", "unparsed"], None),  # items left out
    ('{"health": {"covered": "maybe", "evidence": ""}, "crime": true, "public": {"evidence": "", "covered": false}}',
     ["unparsed", "unparsed", "not_covered"], None),
    ('{"Health": {"evidence": "Overdoses kill", "covered": true}, "crime": {"evidence": "", "covered": false}, '
     '"public": {"evidence": "", "covered": false}, "cost": {"evidence": "x", "covered": true}}',
     ["covered", "not_covered", "not_covered"], "answers for no reference item: cost"),  # a key's case is forgiven
    (f"```json\n{answer(health=('Overdoses kill', True), crime=('', False), public=('', False))}\n```",
     ["covered", "not_covered", "not_covered"], None),
])
def test_unreadable_answers_are_unparsed_never_guessed(reply, statuses, error):
    event = coverage_event(reply, ITEMS, DEBATE, turn=9, speaker=X, topic=0)
    assert [i.status for i in event.items] == statuses and event.error == error
    assert event.covered == statuses.count("covered")
    assert event.raw == (reply if "unparsed" in statuses or error else None)


def test_unparsed_item_says_why():
    event = coverage_event('{"health": {"covered": "maybe", "evidence": ""}}', ITEMS, DEBATE, turn=9, speaker=X, topic=0)
    assert event.items[0].error == "covered: Input should be a valid boolean, unable to interpret input"
    assert event.items[1].error == "no answer for this item"


# ---------------------------------------------------------------- whole runs: who is shown what

class Lines(ScriptedChatCompletionClient):
    """A model whose free-text turns are the given lines in order (the last one repeats)."""

    def __init__(self, *lines: str, **kwargs):
        super().__init__(**kwargs)
        self.lines, self.count = list(lines), 0

    def _text_reply(self, messages):
        self.count += 1
        return self.lines[min(self.count, len(self.lines)) - 1]


def people(judge=("AGREEMENT",), **others) -> dict:
    made = {M: Lines("Let us start. Consider public safety too."), A: Lines("Health outcomes matter most."),
            B: Lines("Crime follows prohibition."), E: ScriptedChatCompletionClient(), X: ScriptedChatCompletionClient(),
            J: ScriptedChatCompletionClient(list(judge))}
    return {**made, **others}


def user_text(request) -> str:
    return request["messages"][-1].content


def test_the_assessor_sees_the_reference_and_the_participants_turns_only(make_scenario, tmp_path):
    made = people()
    out = tmp_path / "run"
    assert run_scenario(make_scenario(topics=2, extra=REFERENCE), out, clients=made) == 0
    t = conference(out)
    [request] = made[X].requests  # topic 2 has no reference outcome: one assessment
    assert request["output"].__name__ == "CoverageReply"
    assert list(request["output"].model_json_schema()["properties"]) == ["health", "crime", "public"]
    assert request["messages"][0].content == (
        "You are Assessor, an impartial assessor. You compare the debate of a decision conference on\n"
        "one topic with the outcome a real conference reached on it, item by item:\n"
        "- health: effects on health\n- crime\n- public: public implications")
    assert user_text(request) == (
        "The participants' debate:\nAlice: Health outcomes matter most.\n\nBob: Crime follows prohibition.\n\n"
        'For each item of the reference outcome, did the participants\' debate on "topic number 1" above\n'
        "address it? Answer as JSON with one key per item, each {\"evidence\": a short passage copied\n"
        "word for word from the debate that addresses the item, or \"\" if there is none, \"covered\":\n"
        "true or false}.")
    # after the judge's AGREEMENT and the evaluator, before the moderator opens topic 2
    assert [(m.speaker, m.action, m.part) for m in t.of_type(Message)][3:7] == [
        (J, "judge", 0), (E, "evaluate", 0), (X, "assess", 0), (M, "open", 1)]
    [coverage] = t.of_type(Coverage)
    assert [(i.name, i.status, i.evidence, i.turn) for i in coverage.items] == [
        ("health", "covered", "Health outcomes matter most.", 2), ("crime", "covered", "Crime follows prohibition.", 3),
        ("public", "not_covered", "", None)]  # the moderator's "public safety" is not the debate's
    assert (coverage.turn, coverage.topic, coverage.covered, coverage.total, coverage.fraction) == (6, 0, 2, 3, 0.6667)
    kinds = [e.type for e in t.events if e.type != "call"]
    at = kinds.index("coverage")
    assert kinds[at - 1] == "message" and t.events[[e.type for e in t.events].index("coverage") - 1].speaker == X
    for name in (M, A, B, J, E):  # no one else is ever shown the assessor's turn
        assert all("Assessor" not in user_text(r) and '"covered"' not in user_text(r) for r in made[name].requests)
    assert "Alice: Health outcomes matter most." in user_text(made[M].requests[1])  # the conference goes on unchanged


def test_the_conference_is_the_same_with_or_without_an_assessor(make_scenario, tmp_path):
    with_it, without = people(), people()
    assert run_scenario(make_scenario(topics=2, extra=REFERENCE, name="a.yaml"), tmp_path / "a", clients=with_it) == 0
    assert run_scenario(make_scenario(topics=2, name="b.yaml"), tmp_path / "b", clients=without) == 0
    for name in (M, A, B, J, E):
        assert [r["messages"] for r in with_it[name].requests] == [r["messages"] for r in without[name].requests]


def test_a_lying_assessor_is_not_believed(make_scenario, tmp_path):
    class Liar(ScriptedChatCompletionClient):
        def _reply(self, messages, output):
            return answer(health=("Health is everything", True), crime=("", True),
                          public=("Consider public safety too.", True))

    out = tmp_path / "run"
    assert run_scenario(make_scenario(topics=1, extra=REFERENCE), out, clients=people(**{X: Liar()})) == 0
    [coverage] = conference(out).of_type(Coverage)
    assert [i.status for i in coverage.items] == ["unverified"] * 3 and coverage.covered == 0
    assert coverage.raw is not None


def test_every_topic_with_a_reference_is_assessed_on_its_own_debate(make_scenario, tmp_path):
    second = ("  - topic: 2\n    items:\n      - name: regimes\n        description: regulatory regimes\n")
    made = people(judge=("AGREEMENT", "AGREEMENT"), **{A: Lines("Health outcomes matter most.", "Regimes differ.")})
    out = tmp_path / "run"
    assert run_scenario(make_scenario(topics=2, extra=REFERENCE + second), out, clients=made) == 0
    first, later = made[X].requests
    assert "topic number 2" in user_text(later) and "Health outcomes" not in user_text(later)
    assert user_text(later).startswith("The participants' debate:\nAlice: Regimes differ.\n\nBob: Crime follows")
    assert [(c.topic, c.covered, c.total) for c in conference(out).of_type(Coverage)] == [(0, 2, 3), (1, 1, 1)]


def test_a_topic_closed_by_the_round_cap_or_the_moderator_is_assessed_too(make_scenario, tmp_path):
    out = tmp_path / "cap"
    made = people(judge=("MORE_DEBATE",) * 9)
    assert run_scenario(make_scenario(topics=1, max_rounds=2, extra=REFERENCE), out, clients=made) == 0
    assert [c.closed_by for c in conference(out).of_type(TopicClosed)] == ["round_cap"]
    assert len(conference(out).of_type(Coverage)) == 1
    out = tmp_path / "nojudge"
    made = people(**{M: ScriptedChatCompletionClient(["NEXT_TOPIC"])})
    del made[J]
    assert run_scenario(make_scenario(topics=1, judge=False, extra=REFERENCE), out, clients=made) == 0
    t = conference(out)
    assert [m.action for m in t.of_type(Message)] == ["open", "speak", "speak", "decide", "evaluate", "assess", "close"]


@pytest.mark.parametrize("extra, key, message", [
    (REFERENCE.replace("assessor:\n  name: Assessor\n", ""), ("reference_outcomes",), "need an `assessor`"),
    ("assessor:\n  name: Assessor\n", ("assessor",), "nothing to assess"),
    (REFERENCE.replace("topic: 1", "topic: 3"), ("reference_outcomes", 0, "topic"), "there are only 2 topic(s)"),
    (REFERENCE + "  - topic: 1\n    items:\n      - name: x\n", ("reference_outcomes", 1, "topic"),
     "topic 1 already has a reference outcome"),
    (REFERENCE.replace("- name: crime", "- name: Health"), ("reference_outcomes", 0, "items", 1, "name"),
     "duplicate item 'Health'"),
    (REFERENCE.replace("name: Assessor", "name: Judge"), ("assessor", "name"), "duplicate agent name 'Judge'"),
    (REFERENCE.replace("source: a test", "sauce: a test"), ("reference_outcomes", 0, "sauce"),
     "unknown key (did you mean 'source'?)"),
    (REFERENCE.replace("      - name: crime\n", "      - name: ''\n"), ("reference_outcomes", 0, "items", 1, "name"),
     "at least 1 character"),
])
def test_bad_references_are_one_error_naming_the_key(make_scenario, extra, key, message):
    with pytest.raises(ScenarioError) as info:
        load_scenario(make_scenario(extra=extra))
    assert info.value.key == key and message in str(info.value)


def test_the_assessor_takes_a_model_like_any_role(make_scenario, tmp_path):
    path = make_scenario(topics=1, extra=REFERENCE)
    path.write_text(path.read_text().replace("  default: scripted\n", "  default: scripted\n  assessor: scripted:AGREEMENT\n"))
    out = tmp_path / "run"
    assert run_scenario(path, out, models=()) == 0
    assert conference(out).started.models[X] == "scripted:AGREEMENT"


# ---------------------------------------------------------------- killed around the assessor's turn

def signature(path: Path) -> tuple:
    t = load(path)
    return ([(m.turn, m.speaker, m.action, m.part, m.round) for m in t.of_type(Message)],
            [(v.turn, v.verdict) for v in t.of_type(Verdict)], [(s.turn, s.overall) for s in t.of_type(Score)],
            [(c.topic, c.rounds, c.closed_by) for c in t.of_type(TopicClosed)],
            [(c.turn, c.topic, c.covered, [(i.name, i.status, i.turn) for i in c.items]) for c in t.of_type(Coverage)])


@pytest.fixture(scope="module")
def assessed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("assessed")
    scenario = folder / "s.yaml"
    scenario.write_text("title: T\ntopics: [one, two]\nmoderator: {name: Moderator}\n"
                        "participants: [{name: Alice}, {name: Bob}]\njudge: {name: Judge}\nevaluator: {name: Evaluator}\n"
                        "models: {default: scripted}\nlimits: {max_rounds_per_topic: 1}\n" + REFERENCE)
    out = folder / "full"
    assert run_scenario(scenario, out, clients=people()) == 0
    return scenario, out


def test_killed_at_any_byte_of_the_assessor_s_turn_resumes_to_the_same_run(assessed, tmp_path):
    scenario, full = assessed
    data = (full / "conference.jsonl").read_bytes()
    lines = data.splitlines(keepends=True)
    expected = signature(full / "conference.jsonl")
    assert expected[4] and expected[4][0][2] == 2  # health and crime covered
    first = next(i for i, line in enumerate(lines) if b'"stage":"assess"' in line)  # the assessor's call
    last = next(i for i, line in enumerate(lines) if b'"type":"coverage"' in line)
    assert last == first + 2  # call, message, coverage: one append
    starts = [sum(map(len, lines[:i])) for i in range(len(lines) + 1)]
    offsets = sorted({starts[i] + d for i in range(first, last + 2) for d in (0, 9, len(lines[i]) - 9)
                      if i < len(lines)} | {starts[last + 1]})
    for offset in offsets:
        folder = tmp_path / f"cut{offset}"
        folder.mkdir()
        shutil.copy(full / "run.json", folder / "run.json")
        (folder / "conference.jsonl").write_bytes(data[:offset])
        assert run_scenario(scenario, folder, clients=people()) == 0, offset
        path = folder / "conference.jsonl"
        assert signature(path) == expected, offset
        t = load(path)
        assert [e.seq for e in t.events] == list(range(1, len(t.events) + 1))
        assert len(t.of_type(RunResumed)) == 1 and t.completed
        calls = [c.key for c in t.calls]
        assert len(calls) == len(set(calls)) == len(expected[0]), offset  # no call twice, none missing


def test_cut_between_the_assessor_s_message_and_its_coverage_writes_the_coverage_on_resume(assessed, tmp_path):
    scenario, full = assessed
    lines = (full / "conference.jsonl").read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if b'"type":"coverage"' in line)
    folder = tmp_path / "cut"
    folder.mkdir()
    shutil.copy(full / "run.json", folder / "run.json")
    (folder / "conference.jsonl").write_bytes(b"".join(lines[:at]))
    assessor = ScriptedChatCompletionClient()
    assert run_scenario(scenario, folder, clients=people(**{X: assessor})) == 0
    assert assessor.requests == []  # the answer was on record: not asked again
    kinds = [e.type for e in load(folder / "conference.jsonl").events]
    assert kinds[at:at + 2] == ["run_resumed", "coverage"]
    assert signature(folder / "conference.jsonl") == signature(full / "conference.jsonl")


# ---------------------------------------------------------------- with vs without the judge, measured

def test_report_puts_with_and_without_judge_side_by_side(make_scenario, tmp_path, capsys):
    alice = Lines("Health outcomes matter most.", "Public awareness saves lives.")
    with_judge = people(judge=("MORE_DEBATE", "AGREEMENT"), **{A: alice})
    assert run_scenario(make_scenario(topics=1, extra=REFERENCE, name="drug_policy.yaml"), tmp_path / "judge",
                        clients=with_judge) == 0
    without = people(**{A: Lines("Health outcomes matter most.", "Public awareness saves lives."),
                        M: ScriptedChatCompletionClient(["NEXT_TOPIC"])})
    del without[J]
    assert run_scenario(make_scenario(topics=1, judge=False, extra=REFERENCE, name="drug_policy_no_judge.yaml"),
                        tmp_path / "nojudge", clients=without) == 0
    capsys.readouterr()
    out = tmp_path / "report"
    assert main(["report", str(tmp_path / "judge"), str(tmp_path / "nojudge"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    expected = ["### Reference coverage, topic 1: topic number 1", "",
                "| reference item | R1 drug_policy | R2 drug_policy_no_judge |", "|---|---|---|",
                "| health | 1/1 | 1/1 |", "| crime | 1/1 | 1/1 |", "| public | 1/1 | 0/1 |",
                "| covered fraction | 1.00 (n=1) | 0.67 (n=1) |"]
    assert "\n".join(expected) in printed and "\n".join(expected) in (out / "report.md").read_text()
    assert "| topic number 1 | " not in printed  # the topic table row is numbered
    head = "| topic | closed by | rounds to agreement | judge verdicts | evaluator overall | reference covered |"
    assert printed.count(head) == 2 and "| 1.00 (n=1) |" in printed and "| 0.67 (n=1) |" in printed
    rows = list(csv.DictReader(open(out / "coverage.csv", encoding="utf-8")))
    assert [(r["run"], r["item"], r["covered"], r["conferences"]) for r in rows] == [
        ("R1", "health", "1", "1"), ("R1", "crime", "1", "1"), ("R1", "public", "1", "1"),
        ("R2", "health", "1", "1"), ("R2", "crime", "1", "1"), ("R2", "public", "0", "1")]
    assert [(float(r["reference_covered_mean"]), r["reference_covered_sd"], r["reference_covered_n"])
            for r in csv.DictReader(open(out / "conference.csv", encoding="utf-8"))] == [
        (1.0, "", "1"), (pytest.approx(2 / 3, abs=1e-4), "", "1")]


def test_rescoring_the_evaluator_shows_it_no_assessment(make_scenario, tmp_path, capsys):
    out = tmp_path / "run"
    assert run_scenario(make_scenario(topics=1, extra=REFERENCE), out, clients=people()) == 0
    assert main(["score", str(out), "--role", "evaluator=scripted"]) == 0
    copy = load(out.with_name("run-rescored-evaluator-scripted") / "conference.jsonl")
    [call] = [c for c in copy.calls if c.stage == "rescore evaluator"]
    shown = call.messages[-1]["content"]
    assert "Alice: Health outcomes matter most." in shown and "Assessor" not in shown and '"covered"' not in shown


def test_score_re_measures_coverage_with_another_assessor(make_scenario, tmp_path, capsys):
    out = tmp_path / "run"
    assert run_scenario(make_scenario(topics=2, extra=REFERENCE), out, clients=people()) == 0
    capsys.readouterr()
    assert main(["score", str(out), "--role", "assessor=scripted:AGREEMENT"]) == 0  # another model spec
    assert "Topic 1: reference coverage of topic 1: 2/3 items (67%); not covered: public" in capsys.readouterr().out
    original = conference(out)
    copy = load(out.with_name("run-rescored-assessor-scripted_AGREEMENT") / "conference.jsonl")
    first, again = copy.of_type(Coverage)  # topic 2 has no reference outcome
    assert (again.speaker, again.model, again.turn, again.topic) == (
        "assessor:scripted:AGREEMENT", "scripted:AGREEMENT", 3, 0)
    assert [(i.name, i.status, i.turn) for i in again.items] == [(i.name, i.status, i.turn) for i in first.items]
    [call] = [c for c in copy.calls if c.stage == "rescore assessor"]
    [asked] = [c for c in original.calls if c.stage == "assess"]
    assert call.messages == asked.messages  # shown exactly what the conference's assessor was shown


# ---------------------------------------------------------------- the assessor by likelihood

LIKELIHOOD = "choice: likelihood\nagreement_threshold: 0.6\n"  # the scripted judge's p(agree) is 0.7


class Quoting(ScriptedChatCompletionClient):
    """A base-model assessor: yes/no per item from its script; asked for the passage on `health`,
    it copies one from the debate (any other passage is the scripted sentence, found nowhere)."""

    def __init__(self, *script: str):
        super().__init__(["BASE", *script])

    def _answer(self, messages, request, extra):
        if isinstance(request, Continue) and "Item: health" in request.prefix:
            return MeasuredResult(content="Health outcomes matter most", finish_reason="stop", cached=False,
                                  usage=RequestUsage(prompt_tokens=0, completion_tokens=4),
                                  detail={"method": "completion"})
        return super()._answer(messages, request, extra)


def test_a_base_model_assessor_is_asked_item_by_item_and_its_quotes_are_checked(make_scenario, tmp_path):
    made = people(**{X: Quoting("yes", "no", "yes")})
    out = tmp_path / "run"
    assert run_scenario(make_scenario(topics=1, extra=REFERENCE + LIKELIHOOD), out, clients=made) == 0
    [coverage] = conference(out).of_type(Coverage)
    assert coverage.method == "scripted" and (coverage.covered, coverage.total) == (1, 3)
    assert [(i.name, i.status, i.turn, i.probability) for i in coverage.items] == [
        ("health", "covered", 2, 0.7), ("crime", "not_covered", None, 0.3), ("public", "unverified", None, 0.7)]
    asked = [r for r in made[X].requests if r["request"] is not None]
    assert [type(r["request"]).__name__ for r in asked] == ["Choose", "Continue", "Choose", "Choose", "Continue"]
    doc = asked[0]["messages"][0].content
    assert doc == ("[The debate on topic 1: topic number 1.]\n\nAlice: Health outcomes matter most.\n\n"
                   "Bob: Crime follows prohibition.\n\n[An assessor compares the debate with the outcome the real "
                   "conference reached on this topic, item by item, quoting the debate.]")  # the debate only
    assert asked[0]["request"].prefix == "Item: health: effects on health\nAddressed in the debate:"
    assert asked[0]["request"].options == ("yes", "no")
    assert asked[1]["request"].prefix.endswith('Addressed in the debate: yes\nQuote from the debate: "')
    assert asked[1]["request"].no_repeat_ngram == 0 and '"' in asked[1]["request"].stop  # copying is the point
    assert "p(yes)=0.30" in " ".join(coverage_rows(coverage)[1])


def test_score_re_measures_coverage_by_likelihood(make_scenario, tmp_path, capsys):
    out = tmp_path / "run"
    assert run_scenario(make_scenario(topics=1, extra=REFERENCE + LIKELIHOOD), out, clients=people()) == 0
    assert main(["score", str(out), "--role", "assessor=scripted:BASE"]) == 0  # says yes; its passages are made up
    assert "reference coverage of topic 1: 0/3 items (0%) (measured: scripted); unverified: health, crime, public" \
        in capsys.readouterr().out
    copy = load(out.with_name("run-rescored-assessor-scripted_BASE") / "conference.jsonl")
    [again] = [c for c in copy.of_type(Coverage) if c.speaker.startswith("assessor:")]
    assert [i.probability for i in again.items] == [0.7, 0.7, 0.7] and again.method == "scripted"
    assert [c.kind for c in copy.calls if c.stage == "rescore assessor"] == ["choice", "continue"] * 3
