"""Strict parsing of closed-set replies (moot.verdicts): accept the expected shape, never guess."""

from __future__ import annotations

import json

import pytest

from moot.agents.conference import decision_of
from moot.protocols.conference_turns import score_from_reply
from moot.verdicts import CRITERIA, EvaluatorScores, JudgeVerdict, ModeratorDecision, parse_reply

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
    assert decision_of(action, raw) == decision
