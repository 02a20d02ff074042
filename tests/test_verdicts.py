"""Strict parsing of closed-set replies (moot.protocols.conference.verdicts): accept the expected shape, never guess."""

from __future__ import annotations

import json

import pytest

from moot.agents.conference.reading import Reading
from moot.protocols.conference.turns import score_from_reply
from moot.protocols.conference.verdicts import (
    CRITERIA, EvaluatorScores, JudgeVerdict, ModeratorDecision, parse_reply, read_judge, read_judge_text,
)

FENCE = "```"


def verdict_json(verdict="AGREEMENT", reason="they agree", **extra) -> str:
    return json.dumps({"verdict": verdict, "reason": reason, **extra})


def scores_json(**changes) -> str:
    data = {**{c: 6 for c in CRITERIA}, "overall": 7, "rationale": "fine"}
    for key, value in changes.items():
        if value is ...:
            data.pop(key)
        else:
            data[key] = value
    return json.dumps(data)


ACCEPTED_VERDICTS = [
    ("AGREEMENT", "AGREEMENT", ""),
    ("MORE DEBATE", "MORE_DEBATE", ""),
    ("MORE_DEBATE", "MORE_DEBATE", ""),
    ("  agreement.\n", "AGREEMENT", ""),
    ("more-debate", "MORE_DEBATE", ""),
    ('"AGREEMENT"', "AGREEMENT", ""),
    (verdict_json(), "AGREEMENT", "they agree"),
    (verdict_json("MORE_DEBATE", "cost is open"), "MORE_DEBATE", "cost is open"),
    (verdict_json("agreement", "lower"), "AGREEMENT", "lower"),
    (verdict_json("more debate", "spaced"), "MORE_DEBATE", "spaced"),
    (f"{FENCE}json\n{verdict_json('MORE_DEBATE', 'fenced')}\n{FENCE}", "MORE_DEBATE", "fenced"),
    (f"{FENCE}\n{verdict_json(reason='bare fence')}\n{FENCE}", "AGREEMENT", "bare fence"),
    ('{"verdict": "AGREEMENT", "reason": "line one\nline two"}', "AGREEMENT", "line one\nline two"),
]


@pytest.mark.parametrize("raw, verdict, reason", ACCEPTED_VERDICTS)
def test_judge_verdict_accepted(raw, verdict, reason):
    parsed = parse_reply(JudgeVerdict, raw)
    assert parsed.error is None
    assert parsed.value == JudgeVerdict(verdict=verdict, reason=reason)
    assert parsed.raw == raw


REJECTED_VERDICTS = [
    ("there is no AGREEMENT yet", "not JSON"),
    ("I think there is no AGREEMENT yet, maybe DONE?", "not JSON"),
    ("Verdict: AGREEMENT", "not JSON"),
    ("AGREEMENT AGREEMENT", "not JSON"),
    ("AGREEMENT, but MORE DEBATE on costs", "not JSON"),
    ("NEXT_TOPIC", "not JSON"),  # a moderator label is not a judge verdict
    ("", "not JSON"),
    (verdict_json(extra="x"), "extra: Extra inputs are not permitted"),
    (verdict_json(confidence=0.9), "confidence: Extra inputs are not permitted"),
    ('{"verdict": "AGREEMENT"}', "reason: Field required"),
    (verdict_json("MAYBE"), "verdict: Input should be 'AGREEMENT' or 'MORE_DEBATE'"),
    (verdict_json(reason="x" * 401), "reason: String should have at most 400 characters"),
    ('["AGREEMENT"]', "reply: Input should be a valid dictionary"),
    (f"Sure! {FENCE}json\n{verdict_json()}\n{FENCE}", "not JSON"),  # text around the fence
]


@pytest.mark.parametrize("raw, error", REJECTED_VERDICTS)
def test_judge_verdict_rejected_keeps_raw_text(raw, error):
    parsed = parse_reply(JudgeVerdict, raw)
    assert parsed.value is None
    assert parsed.error is not None and parsed.error.startswith(error), parsed.error
    assert parsed.raw == raw


@pytest.mark.parametrize("raw, decision, message", [
    ("NEXT_TOPIC", "NEXT_TOPIC", ""),
    ("next topic", "NEXT_TOPIC", ""),
    ("MORE DEBATE", "MORE_DEBATE", ""),
    ('{"decision": "next-topic", "message": "Moving on."}', "NEXT_TOPIC", "Moving on."),
    (f'{FENCE}json\n{{"decision": "MORE_DEBATE", "message": "Go on."}}\n{FENCE}', "MORE_DEBATE", "Go on."),
])
def test_moderator_decision_accepted(raw, decision, message):
    assert parse_reply(ModeratorDecision, raw).value == ModeratorDecision(decision=decision, message=message)


@pytest.mark.parametrize("raw", [
    "AGREEMENT",  # a judge label is not a moderator decision
    "we should move to the NEXT_TOPIC now",
    '{"decision": "NEXT_TOPIC", "message": "ok", "verdict": "AGREEMENT"}',
    '{"decision": "DONE", "message": "ok"}',
])
def test_moderator_decision_rejected(raw):
    parsed = parse_reply(ModeratorDecision, raw)
    assert parsed.value is None and parsed.error and parsed.raw == raw


def test_evaluator_scores_accepted():
    parsed = parse_reply(EvaluatorScores, scores_json(clarity=1, flow=10))
    assert parsed.error is None
    assert parsed.value.clarity == 1 and parsed.value.flow == 10 and parsed.value.relevance == 6
    assert parsed.value.overall == 7 and parsed.value.rationale == "fine"


def test_evaluator_scores_fenced():
    raw = f"{FENCE}json\n{scores_json(overall=3)}\n{FENCE}"
    assert parse_reply(EvaluatorScores, raw).value.overall == 3


SCORE_ERRORS = [
    ({"overall": 0}, "overall: Input should be greater than or equal to 1"),
    ({"overall": 11}, "overall: Input should be less than or equal to 10"),
    ({"clarity": 0}, "clarity: Input should be greater than or equal to 1"),
    ({"emotional_intelligence": 11}, "emotional_intelligence: Input should be less than or equal to 10"),
    ({"flow": ...}, "flow: Field required"),
    ({"overall": ...}, "overall: Field required"),
    ({"overall": 7.5}, "overall: Input should be a valid integer"),
    ({"coherence": "7"}, "coherence: Input should be a valid integer"),
    ({"politeness": True}, "politeness: Input should be a valid integer"),
    ({"relevance": None}, "relevance: Input should be a valid integer"),
    ({"relevance": "high"}, "relevance: Input should be a valid integer"),
    ({"humour": 5}, "humour: Extra inputs are not permitted"),
]


@pytest.mark.parametrize("changes, error", SCORE_ERRORS)
def test_evaluator_scores_rejected_with_error(changes, error):
    raw = scores_json(**changes)
    parsed = parse_reply(EvaluatorScores, raw)
    assert parsed.value is None
    assert parsed.error == error or parsed.error.startswith(error), parsed.error
    assert parsed.raw == raw


def test_bare_label_is_not_an_evaluation():
    parsed = parse_reply(EvaluatorScores, "AGREEMENT")
    assert parsed.value is None and parsed.error.startswith("not JSON")


def test_unparsed_score_event_keeps_raw_and_error():
    raw = scores_json(overall=11)
    event = score_from_reply(raw, turn=9, speaker="Evaluator", topic=0, model="scripted")
    assert (event.parsed, event.raw, event.scores, event.overall) == (False, raw, {}, None)
    assert event.error == "overall: Input should be less than or equal to 10"
    good = score_from_reply(scores_json(), turn=9, speaker="Evaluator", topic=0, model="scripted")
    assert good.parsed and good.overall == 7 and good.scores == {c: 6 for c in CRITERIA} and good.raw is None


@pytest.mark.parametrize("action, raw, decision", [
    ("judge", "AGREEMENT", "AGREEMENT"),
    ("judge", "there is no AGREEMENT yet", "UNPARSED"),
    ("judge", verdict_json("more debate"), "MORE_DEBATE"),
    ("decide", "NEXT_TOPIC", "NEXT_TOPIC"),
    ("decide", "AGREEMENT", "UNPARSED"),
    ("speak", "AGREEMENT", None),  # participant text is never a decision
    ("evaluate", scores_json(), None),
    ("open", "NEXT_TOPIC", None),
])
def test_routing_decision_of_a_turn(action, raw, decision):
    assert Reading().decision(action, raw) == decision


# ---------------------------------------------------------------- the paper's plain-text judge

PLAIN_ACCEPTED = [
    ("AGREEMENT", "AGREEMENT"),  # Fig. A3
    ("MORE DEBATE", "MORE_DEBATE"),  # Fig. A2
    ("agreement", "AGREEMENT"),
    ("  Agreement!\n", "AGREEMENT"),
    ("More Debate.", "MORE_DEBATE"),
    ("MORE  DEBATE", "MORE_DEBATE"),
    ("MORE_DEBATE", "MORE_DEBATE"),
    ("more-debate", "MORE_DEBATE"),
    ("MoreDebate", "MORE_DEBATE"),
    ("**AGREEMENT**", "AGREEMENT"),
    ('"MORE DEBATE"', "MORE_DEBATE"),
    ("Verdict: AGREEMENT", "AGREEMENT"),
    ("AGREEMENT\nAGREEMENT", "AGREEMENT"),  # the same label twice
    ("AGREEMENT. The participants agree on all seven clusters.", "AGREEMENT"),
    ("The participants have reached agreement.", "AGREEMENT"),
    ("MORE DEBATE - they still disagree on cost", "MORE_DEBATE"),
    ("MORE DEBATE: the public cluster is not addressed yet.", "MORE_DEBATE"),  # the negation is another clause
    ("Both sides remain far apart; MORE DEBATE.", "MORE_DEBATE"),
    (verdict_json("AGREEMENT", "they agree"), "AGREEMENT"),  # JSON the judge was not asked for still names one label
]

PLAIN_UNPARSED = [
    ("there is no AGREEMENT yet", "negated or hedged"),
    ("There is no agreement yet.", "negated or hedged"),
    ("AGREEMENT has not been reached", "negated or hedged"),
    ("They don't have agreement", "negated or hedged"),
    ("We are almost in agreement.", "negated or hedged"),
    ("Partial agreement only.", "negated or hedged"),
    ("Maybe AGREEMENT", "negated or hedged"),
    ("No more debate is needed.", "negated or hedged"),  # implies agreement, but is not the label
    ("I must decide whether agreement was reached.", "negated or hedged"),
    ("AGREEMENT?", "a question"),
    ("Have they reached agreement?", "a question"),
    ("AGREEMENT, but MORE DEBATE on costs", "both AGREEMENT and MORE DEBATE"),
    ("Is there agreement? MORE DEBATE", "both AGREEMENT and MORE DEBATE"),
    ("I think there is no AGREEMENT yet, maybe DONE?", "a question"),
    ("The participants disagree.", "no verdict"),
    ("I see disagreement.", "no verdict"),  # "disagreement" is not the label
    ("Agreements were made.", "no verdict"),
    ("DONE", "no verdict"),
    ("", "no verdict"),
]


@pytest.mark.parametrize("raw, verdict", PLAIN_ACCEPTED)
def test_plain_text_judge_accepted(raw, verdict):
    parsed = read_judge_text(raw)
    assert parsed.error is None and parsed.value == JudgeVerdict(verdict=verdict, reason="") and parsed.raw == raw
    assert read_judge("text", raw) == parsed


@pytest.mark.parametrize("raw, error", PLAIN_UNPARSED)
def test_plain_text_judge_unparsed_keeps_raw(raw, error):
    parsed = read_judge_text(raw)
    assert parsed.value is None and parsed.raw == raw
    assert parsed.error.startswith(error), parsed.error
    assert Reading("text").decision("judge", raw) == "UNPARSED"


def test_structured_judge_stays_strict_where_the_text_judge_reads_prose():
    prose = "The participants have reached agreement."
    assert read_judge("structured", prose).value is None and read_judge("text", prose).value.verdict == "AGREEMENT"


@pytest.mark.parametrize("reading, raw, shown", [
    (Reading("structured", True), verdict_json("MORE_DEBATE", "cost is open"), "MORE_DEBATE: cost is open"),
    (Reading("structured", False), verdict_json("MORE_DEBATE", "cost is open"), "MORE DEBATE"),
    (Reading("structured", True), "no idea", "(unparsed reply) no idea"),
    (Reading("structured", False), "no idea", "(no clear verdict)"),
    (Reading("text", True), " MORE DEBATE - cost is open ", "MORE DEBATE - cost is open"),
    (Reading("text", False), "MORE DEBATE - cost is open", "MORE DEBATE"),
    (Reading("text", False), "Agreement.", "AGREEMENT"),
    (Reading("text", False), "there is no AGREEMENT yet", "(no clear verdict)"),
])
def test_what_the_others_read_of_a_judge_turn(reading, raw, shown):
    assert reading.display("judge", raw) == shown


def test_the_text_judge_asks_for_free_text_and_its_own_template():
    assert Reading("text").output("judge") is None and Reading().output("judge") is JudgeVerdict
    assert Reading("text").output("decide") is ModeratorDecision  # the deciding moderator stays structured
    assert Reading("text").template("judge", "judge") == "judge_turn_text"
    assert Reading().template("judge", "judge") == "judge_turn"
    assert Reading("text", True).template("moderator", "continue") == "moderator_continue"
    assert Reading("text", False).template("moderator", "continue") == "moderator_continue_no_reason"
    assert Reading().template("moderator", "open") == "moderator_open"
