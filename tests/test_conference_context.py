"""What each conference agent is shown (its context window): the choice itself, then whole runs on
recording scripted models, one per window."""

from __future__ import annotations

import pytest
from run_support import conference, run_scenario

from moot.agents.conference.context import Left, Said, context_window, estimate_tokens
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.protocols.conference.schema import ContextWindow
from moot.scenario.load import ScenarioError, load_scenario

M, A, B, J, E = "Moderator", "Alice", "Bob", "Judge", "Evaluator"


def said(speaker: str, action: str, topic: int, round_: int, text: str = "") -> Said:
    body = (text or f"{action} {topic}.{round_}").ljust(36 - len(speaker), ".")
    return Said(speaker, body, action, topic, round_)  # `Who: text` is 38-40 characters: 10 tokens


TASK = Said("Task", "T" * 34)  # "Task: " + 34 = 40 characters: 10 tokens
HISTORY = [
    TASK,
    said("Mod", "open", 0, 1), said("Ali", "speak", 0, 1), said("Bob", "speak", 0, 1), said("Jud", "judge", 0, 1),
    said("Mod", "continue", 0, 2), said("Ali", "speak", 0, 2), said("Bob", "speak", 0, 2), said("Jud", "judge", 0, 2),
    said("Eva", "evaluate", 0, 2), said("Ass", "assess", 0, 2),
    said("Mod", "open", 1, 1), said("Ali", "speak", 1, 1), said("Bob", "speak", 1, 1),
]
TURNS = [s for s in HISTORY[1:] if s.action != "assess"]  # 12 turns; the assessor's is never shown


def window(kind: str, **sizes) -> ContextWindow:
    return ContextWindow(window=kind, **sizes)


def test_estimate_is_characters_over_four_rounded_up():
    assert [estimate_tokens(t) for t in ("", "abcd", "abcde", "x" * 40)] == [0, 1, 2, 10]


def test_conference_window_is_everything_said_but_the_assessment():
    assert context_window(HISTORY, 1, window("conference")) == [TASK, *TURNS]


def test_topic_window_is_the_current_topic_after_a_note_of_what_was_left_out():
    assert context_window(HISTORY, 1, window("topic")) == [TASK, Left(9), *TURNS[9:]]
    assert context_window(HISTORY, 1, window("topic", turns=2)) == [TASK, Left(10), *TURNS[10:]]
    assert context_window(HISTORY, 2, window("topic")) == [TASK, Left(12)]  # a topic not yet opened
    assert context_window(HISTORY, None, window("topic", turns=3)) == [TASK, Left(9), *TURNS[9:]]  # closing


def test_turns_window_is_the_last_turns_across_topics():
    assert context_window(HISTORY, 1, window("turns", turns=4)) == [TASK, Left(8), *TURNS[8:]]
    assert context_window(HISTORY, 1, window("turns", turns=99)) == [TASK, *TURNS]


def test_budget_keeps_task_latest_turn_conclusions_then_recent_turns():
    # task 10 + latest 10 + topic 1's conclusion (its last round: Ali, Bob, Jud) 30 + one more turn 10
    shown = context_window(HISTORY, 1, window("budget", tokens=60))
    assert shown == [TASK, Left(5), TURNS[5], TURNS[6], TURNS[7], Left(2), TURNS[10], TURNS[11]]
    assert [s.text[:11] for s in shown if isinstance(s, Said)][1:4] == ["speak 0.2..", "speak 0.2..", "judge 0.2.."]


def test_budget_drops_a_conclusion_that_does_not_fit_whole_and_always_keeps_the_latest_turn():
    assert context_window(HISTORY, 1, window("budget", tokens=49)) == [TASK, Left(9), TURNS[9], TURNS[10], TURNS[11]]
    assert context_window(HISTORY, 1, window("budget", tokens=15)) == [TASK, Left(11), TURNS[11]]
    assert context_window(HISTORY, None, window("budget", tokens=15)) == [TASK, Left(11), TURNS[11]]
    assert context_window([TASK], 0, window("budget", tokens=50)) == [TASK]


def test_budget_counts_with_the_given_counter():
    words = context_window(HISTORY, 1, window("budget", tokens=8), count=lambda text: len(text.split()))
    assert words == [TASK, Left(10), TURNS[10], TURNS[11]]  # task 2 + latest 3 + one more 3; topic 1's 9 never fit


# ---------------------------------------------------------------- whole runs: who is shown what

def judged(make_scenario, tmp_path, extra: str = "", text: str = ""):
    """A two-topic conference (MORE_DEBATE then AGREEMENT on topic 1); the recording clients."""
    made = {name: ScriptedChatCompletionClient() for name in (M, A, B, E)}
    made[J] = ScriptedChatCompletionClient(["MORE_DEBATE", "AGREEMENT", "AGREEMENT"])
    path = make_scenario(topics=2, extra=extra)
    if text:
        path.write_text(path.read_text().replace("limits:\n", f"limits:\n{text}"))
    out = tmp_path / "run"
    assert run_scenario(path, out, clients=made) == 0
    return made, conference(out)


def paragraphs(request) -> list[str]:
    """The speakers (or notes) of the history a request showed, in order."""
    body = request["messages"][-1].content.split("\n\n")
    return [p.split(":")[0] if not p.startswith("(") else p for p in body[1:-1] if not p.startswith("Decide")]


def test_run_topic_window_the_judge_of_topic_2_sees_topic_2_only(make_scenario, tmp_path):
    made, t = judged(make_scenario, tmp_path, "context:\n  window: topic\n")
    assert t.started.scenario["context"] == {"window": "topic", "turns": None, "tokens": None}
    third = made[J].requests[2]
    assert paragraphs(third) == ["(9 earlier turn(s) not shown)", M, A, B]
    assert "topic number 1" not in third["messages"][-1].content.split("Has the debate")[0]


def test_run_turns_window(make_scenario, tmp_path):
    made, _ = judged(make_scenario, tmp_path, "context:\n  window: turns\n  turns: 2\n")
    assert paragraphs(made[J].requests[2]) == ["(10 earlier turn(s) not shown)", A, B]
    assert paragraphs(made[M].requests[3]) == ["(12 earlier turn(s) not shown)", J, E]  # the closing


def test_run_budget_window_keeps_topic_1_conclusion_for_topic_2(make_scenario, tmp_path):
    # task 13 + Bob 23 + topic 1's round 2 (Alice 23, Bob 23, Judge 9) + Alice 23 = 114; the moderator's 29 no
    made, _ = judged(make_scenario, tmp_path, "context:\n  window: budget\n  tokens: 120\n")
    assert paragraphs(made[J].requests[2]) == ["(5 earlier turn(s) not shown)", A, B, J,
                                               "(2 earlier turn(s) not shown)", A, B]


def test_old_context_messages_key_is_the_topic_window(make_scenario, tmp_path):
    made, t = judged(make_scenario, tmp_path, text="  context_messages: 2\n")
    assert t.started.scenario["limits"]["context_messages"] == 2
    assert paragraphs(made[J].requests[2]) == ["(10 earlier turn(s) not shown)", A, B]
    assert paragraphs(made[J].requests[0]) == ["(1 earlier turn(s) not shown)", A, B]


@pytest.mark.parametrize("text, key, message", [
    ("context:\n  window: turns\n", ("context", "turns"), "`window: turns` needs `turns`"),
    ("context:\n  window: budget\n", ("context", "tokens"), "`window: budget` needs `tokens`"),
    ("context:\n  turns: 5\n", ("context", "turns"), "applies to `window: turns` or `topic`, not `conference`"),
    ("context:\n  window: topic\n  tokens: 500\n", ("context", "tokens"), "applies to `window: budget`"),
    ("context:\n  window: everything\n", ("context", "window"), "Input should be 'conference', 'topic'"),
])
def test_bad_context_is_one_error_naming_the_key(make_scenario, text, key, message):
    with pytest.raises(ScenarioError) as info:
        load_scenario(make_scenario(extra=text))
    assert info.value.key == key and message in str(info.value)


def test_context_and_its_older_form_together_are_an_error(make_scenario):
    path = make_scenario(extra="context:\n  window: topic\n")
    path.write_text(path.read_text().replace("limits:\n", "limits:\n  context_messages: 4\n"))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.key == ("limits", "context_messages") and "older form of `context`" in str(info.value)


@pytest.mark.parametrize("extra, sees_topic_1", [("", True), ("context:\n  window: topic\n", False),
                                                 ("context:\n  window: turns\n  turns: 2\n", False)])
def test_every_role_is_shown_through_the_same_window(make_scenario, tmp_path, extra, sees_topic_1):
    made, t = judged(make_scenario, tmp_path, extra)
    during_topic_2 = {M: made[M].requests[2], A: made[A].requests[2], B: made[B].requests[2],
                      J: made[J].requests[2], E: made[E].requests[1]}
    for name, request in during_topic_2.items():
        history = request["messages"][-1].content.rsplit("\n\n", 1)[0]
        assert ("My contribution on topic number 1" in history) == sees_topic_1, name
        assert history.startswith("Conversation so far:\nTask: Test conference"), name
