"""The pure conference policy (speaker_selection.conference): Algorithm 1 of Heller et al.

Turns are written as "Speaker" or "Speaker:DECISION"; each table row gives the turns so far
and the expected next step (speaker, action, topic, round, closed_by).
"""

from __future__ import annotations

import pytest

from moot.speaker_selection.conference import ConferencePlan, PolicyError, Step, Turn, next_step, walk

M, P1, P2, P3, P4, J, E = "Moderator", "P1", "P2", "P3", "P4", "Judge", "Evaluator"


def plan(**changes) -> ConferencePlan:
    base = dict(moderator=M, participants=(P1, P2), judge=J, evaluator=E, topic_count=2, max_rounds=3)
    return ConferencePlan(**{**base, **changes})


def turns(*spec: str) -> list[Turn]:
    out = []
    for item in spec:
        speaker, _, decision = item.partition(":")
        out.append(Turn(speaker, decision or None))
    return out


def step(speaker, action, topic, rnd=1, closed_by=None) -> Step:
    return Step(speaker, action, topic, rnd, closed_by)


ROUND = (M, P1, P2)  # moderator opens, participants speak; the judge follows


def test_paper_figure_a2_a3_flow_step_by_step():
    """Fig. A2-A3: moderator, P1, P2, judge MORE_DEBATE -> moderator -> P1, P2, judge
    AGREEMENT -> evaluator -> moderator opens topic 2."""
    history = turns(M, P1, P2, "Judge:MORE_DEBATE", M, P1, P2, "Judge:AGREEMENT", E)
    steps = walk(plan(), history)
    assert steps == [
        step(M, "open", 0, 1),
        step(P1, "speak", 0, 1),
        step(P2, "speak", 0, 1),
        step(J, "judge", 0, 1),
        step(M, "continue", 0, 2),
        step(P1, "speak", 0, 2),
        step(P2, "speak", 0, 2),
        step(J, "judge", 0, 2),
        step(E, "evaluate", 0, 2, "agreement"),
        step(M, "open", 1, 1),
    ]


CASES = [
    # (id, plan changes, turns, expected next step)
    ("start", {}, [], step(M, "open", 0, 1)),
    ("after open", {}, [M], step(P1, "speak", 0, 1)),
    ("last participant -> judge", {}, [M, P1, P2], step(J, "judge", 0, 1)),
    ("more debate -> moderator continues", {}, [*ROUND, "Judge:MORE_DEBATE"], step(M, "continue", 0, 2)),
    ("continue -> first participant", {}, [*ROUND, "Judge:MORE_DEBATE", M], step(P1, "speak", 0, 2)),
    ("agreement -> evaluator", {}, [*ROUND, "Judge:AGREEMENT"], step(E, "evaluate", 0, 1, "agreement")),
    ("evaluator -> next topic", {}, [*ROUND, "Judge:AGREEMENT", E], step(M, "open", 1, 1)),
    ("unparsed counts as more debate", {}, [*ROUND, "Judge:UNPARSED"], step(M, "continue", 0, 2)),
    ("no decision counts as more debate", {}, [*ROUND, J], step(M, "continue", 0, 2)),
    ("N=3 participants in order", {"participants": (P1, P2, P3)}, [M, P1, P2], step(P3, "speak", 0, 1)),
    ("N=3 judge after third", {"participants": (P1, P2, P3)}, [M, P1, P2, P3], step(J, "judge", 0, 1)),
    ("N=4 judge after fourth", {"participants": (P1, P2, P3, P4)}, [M, P1, P2, P3, P4],
     step(J, "judge", 0, 1)),
    ("N=4 round 2 starts with P1", {"participants": (P1, P2, P3, P4), "on_more_debate": "participants"},
     [M, P1, P2, P3, P4, "Judge:MORE_DEBATE"], step(P1, "speak", 0, 2)),
    ("on_more_debate=participants", {"on_more_debate": "participants"},
     [*ROUND, "Judge:MORE_DEBATE"], step(P1, "speak", 0, 2)),
    ("round cap closes the topic", {"max_rounds": 2},
     [*ROUND, "Judge:MORE_DEBATE", M, P1, P2, "Judge:MORE_DEBATE"], step(E, "evaluate", 0, 2, "round_cap")),
    ("round cap with unparsed verdict", {"max_rounds": 1},
     [*ROUND, "Judge:UNPARSED"], step(E, "evaluate", 0, 1, "round_cap")),
    ("agreement at the cap is still agreement", {"max_rounds": 1},
     [*ROUND, "Judge:AGREEMENT"], step(E, "evaluate", 0, 1, "agreement")),
    ("no evaluator: agreement -> next topic", {"evaluator": None},
     [*ROUND, "Judge:AGREEMENT"], step(M, "open", 1, 1, "agreement")),
    ("no evaluator: round cap -> next topic", {"evaluator": None, "max_rounds": 1},
     [*ROUND, "Judge:MORE_DEBATE"], step(M, "open", 1, 1, "round_cap")),
    ("last topic -> close", {"topic_count": 1}, [*ROUND, "Judge:AGREEMENT", E], step(M, "close", None, 1)),
    ("no evaluator: last topic -> close", {"topic_count": 1, "evaluator": None},
     [*ROUND, "Judge:AGREEMENT"], step(M, "close", None, 1, "agreement")),
    ("close -> end", {"topic_count": 1}, [*ROUND, "Judge:AGREEMENT", E, M], step(None, "end", None, 1)),
    ("participant AGREEMENT changes nothing", {}, [M, "P1:AGREEMENT"], step(P2, "speak", 0, 1)),
    ("participant AGREEMENT before judge", {}, [M, P1, "P2:AGREEMENT"], step(J, "judge", 0, 1)),
    ("moderator AGREEMENT on open changes nothing", {}, ["Moderator:AGREEMENT"], step(P1, "speak", 0, 1)),
]

NO_JUDGE = {"judge": None, "agreement": "moderator"}
NO_JUDGE_CASES = [
    ("last participant -> moderator decides", [M, P1, P2], step(M, "decide", 0, 1)),
    ("NEXT_TOPIC closes by moderator", [*ROUND, "Moderator:NEXT_TOPIC"], step(E, "evaluate", 0, 1, "moderator")),
    ("MORE_DEBATE -> participants again", [*ROUND, "Moderator:MORE_DEBATE"], step(P1, "speak", 0, 2)),
    ("UNPARSED -> participants again", [*ROUND, "Moderator:UNPARSED"], step(P1, "speak", 0, 2)),
    ("round 2 decide", [*ROUND, "Moderator:MORE_DEBATE", P1, P2], step(M, "decide", 0, 2)),
    ("cap closes by round_cap", [*ROUND, "Moderator:MORE_DEBATE", P1, P2, "Moderator:MORE_DEBATE",
                                 P1, P2, "Moderator:MORE_DEBATE"], step(E, "evaluate", 0, 3, "round_cap")),
    ("AGREEMENT is not a moderator decision", [*ROUND, "Moderator:AGREEMENT"], step(P1, "speak", 0, 2)),
    ("topic 2 then close", [*ROUND, "Moderator:NEXT_TOPIC", E, M, P1, P2, "Moderator:NEXT_TOPIC", E],
     step(M, "close", None, 1)),
]


@pytest.mark.parametrize("changes, history, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_next_step(changes, history, expected):
    assert next_step(plan(**changes), turns(*history)) == expected


@pytest.mark.parametrize("history, expected", [c[1:] for c in NO_JUDGE_CASES], ids=[c[0] for c in NO_JUDGE_CASES])
def test_without_judge_moderator_decides(history, expected):
    assert next_step(plan(**NO_JUDGE), turns(*history)) == expected


def test_without_judge_and_without_evaluator_next_topic_opens_directly():
    p = plan(judge=None, agreement="moderator", evaluator=None)
    assert next_step(p, turns(*ROUND, "Moderator:NEXT_TOPIC")) == step(M, "open", 1, 1, "moderator")


@pytest.mark.parametrize("participants", [(P1, P2), (P1, P2, P3), (P1, P2, P3, P4)])
def test_full_conference_speaker_sequence(participants):
    """Two topics, first needs two rounds; every participant speaks each round, in order."""
    p = plan(participants=participants)
    rnd = [*participants]
    history = [M, *rnd, "Judge:MORE_DEBATE", M, *rnd, "Judge:AGREEMENT", E, M, *rnd, "Judge:AGREEMENT", E, M]
    steps = walk(p, turns(*history))
    assert [s.speaker for s in steps[:-1]] == [h.split(":")[0] for h in history]
    assert steps[-1] == step(None, "end", None, 1)
    topics = [s.topic for s in steps[:-1]]
    n = len(participants)
    assert topics == [0] * (2 * (n + 2) + 1) + [1] * (n + 3) + [None]
    assert [s.round for s in steps[: n + 2]] == [1] * (n + 2)
    assert [s.closed_by for s in steps if s.closed_by] == ["agreement", "agreement"]


WRONG = [
    ("participant instead of moderator", [P1], "turn 1: expected 'Moderator' (open), got 'P1'"),
    ("P2 before P1", [M, P2], "turn 2: expected 'P1' (speak), got 'P2'"),
    ("participant instead of judge", [M, P1, P2, P1], "turn 4: expected 'Judge' (judge), got 'P1'"),
    ("skipping the evaluator", [*ROUND, "Judge:AGREEMENT", M], "turn 5: expected 'Evaluator' (evaluate)"),
    ("unknown speaker", [M, "Stranger"], "got 'Stranger'"),
]


@pytest.mark.parametrize("history, message", [c[1:] for c in WRONG], ids=[c[0] for c in WRONG])
def test_wrong_speaker_is_a_policy_error(history, message):
    with pytest.raises(PolicyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        walk(plan(), turns(*history))


def test_turn_after_close_is_a_policy_error():
    history = [*ROUND, "Judge:AGREEMENT", E, M]
    with pytest.raises(PolicyError, match="after the conference closed"):
        walk(plan(topic_count=1), turns(*history, M))


def test_policy_reads_only_decisions_not_text():
    """Identical speakers and decisions give identical steps whatever else a turn carries."""
    a = walk(plan(), turns(M, "P1:AGREEMENT", "P2:DONE", "Judge:MORE_DEBATE"))
    b = walk(plan(), turns(M, P1, P2, "Judge:MORE_DEBATE"))
    assert a == b


@pytest.mark.parametrize("changes", [
    {"participants": (P1,)}, {"topic_count": 0}, {"max_rounds": 0}, {"judge": None},
])
def test_invalid_plans_are_rejected(changes):
    with pytest.raises(ValueError):
        plan(**changes)
