"""The judge as the paper has it (a plain-text verdict) and the forwarding of its reason: what the
judge is asked, how its reply is read and recorded, and what the moderator and the participants
are told — on recording scripted models."""

from __future__ import annotations

import pytest
from run_support import conference, run_scenario

from moot.protocols.conference.events import TopicClosed, Verdict
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.scenario.load import ScenarioError, load_scenario

M, A, B, J, E = "Moderator", "Alice", "Bob", "Judge", "Evaluator"
REASONED = "MORE DEBATE - nobody has addressed the public cluster"


class Replies(ScriptedChatCompletionClient):
    """A model whose free-text replies are the given texts, in order."""

    def __init__(self, *texts: str):
        super().__init__()
        self.texts = list(texts)

    def _reply(self, messages, output):
        return self.texts.pop(0) if output is None else super()._reply(messages, output)


def judged(make_scenario, tmp_path, judging: str, judge: ScriptedChatCompletionClient):
    made = {name: ScriptedChatCompletionClient() for name in (M, A, B, E)}
    made[J] = judge
    out = tmp_path / "run"
    assert run_scenario(make_scenario(topics=1, extra=judging), out, clients=made) == 0
    return made, conference(out)


def user_text(request) -> str:
    return request["messages"][-1].content


TEXT_NO_REASON = "judging:\n  form: text\n  forward_reason: false\n"


def test_paper_judge_plain_text_and_only_the_verdict_reaches_the_others(make_scenario, tmp_path):
    made, t = judged(make_scenario, tmp_path, TEXT_NO_REASON, Replies(REASONED, "AGREEMENT."))
    first, second = made[J].requests
    assert first["output"] is None  # free text, no structured output
    assert user_text(first).endswith('Has the debate on "topic number 1" reached agreement among Alice and Bob? '
                                     'Answer with exactly\none of AGREEMENT or MORE DEBATE, and nothing else.')
    verdicts = t.of_type(Verdict)
    assert [(v.round, v.verdict, v.reason, v.raw) for v in verdicts] == [
        (1, "MORE_DEBATE", "", REASONED), (2, "AGREEMENT", "", "AGREEMENT.")]
    assert [(c.rounds, c.closed_by) for c in t.of_type(TopicClosed)] == [(2, "agreement")]
    moderator = user_text(made[M].requests[1])  # asked to continue after MORE DEBATE
    assert "Judge: MORE DEBATE\n\n" in moderator and "public cluster" not in moderator
    assert moderator.endswith('The judge ruled that the participants need more debate on "topic number 1" '
                              '(round 2 of at\nmost 3). Ask the participants to continue.')
    for name in (A, B, J, E):  # nobody ever reads the judge's reason
        assert all("public cluster" not in user_text(r) for r in made[name].requests)
    assert "Judge: MORE DEBATE\n\n" in user_text(made[A].requests[1])
    assert "Judge: AGREEMENT" in user_text(made[E].requests[0])


def test_text_judge_with_its_reason_forwarded(make_scenario, tmp_path):
    made, t = judged(make_scenario, tmp_path, "judging:\n  form: text\n", Replies(REASONED, "AGREEMENT"))
    moderator = user_text(made[M].requests[1])
    assert f"Judge: {REASONED}\n\n" in moderator  # the judge's whole reply, as written
    assert moderator.endswith(f"(round 2 of at\nmost 3). The judge's reason: {REASONED}\n"
                              "Ask the participants to continue, pointing at what is still open.")
    assert f"Judge: {REASONED}" in user_text(made[A].requests[1])


def test_structured_judge_without_its_reason(make_scenario, tmp_path):
    made, t = judged(make_scenario, tmp_path, "judging:\n  forward_reason: false\n",
                     ScriptedChatCompletionClient(["MORE_DEBATE", "AGREEMENT"]))
    assert made[J].requests[0]["output"].__name__ == "JudgeVerdict"
    assert [(v.verdict, v.reason, v.raw) for v in t.of_type(Verdict)] == [
        ("MORE_DEBATE", "scripted more_debate", None), ("AGREEMENT", "scripted agreement", None)]
    moderator = user_text(made[M].requests[1])
    assert "Judge: MORE DEBATE\n\n" in moderator and "scripted more_debate" not in moderator
    assert "The judge's reason" not in moderator


def test_structured_judge_default_forwards_its_reason(make_scenario, tmp_path):
    made, _ = judged(make_scenario, tmp_path, "", ScriptedChatCompletionClient(["MORE_DEBATE", "AGREEMENT"]))
    moderator = user_text(made[M].requests[1])
    assert "Judge: MORE_DEBATE: scripted more_debate\n\n" in moderator
    assert "The judge's reason: MORE_DEBATE: scripted more_debate" in moderator


def test_unreadable_plain_verdict_is_unparsed_routed_as_more_debate_and_shown_as_no_verdict(make_scenario, tmp_path):
    made, t = judged(make_scenario, tmp_path, TEXT_NO_REASON,
                     Replies("There is no AGREEMENT yet.", "AGREEMENT, but MORE DEBATE on costs", "Agreement"))
    verdicts = t.of_type(Verdict)
    assert [(v.verdict, v.raw) for v in verdicts] == [
        ("UNPARSED", "There is no AGREEMENT yet."), ("UNPARSED", "AGREEMENT, but MORE DEBATE on costs"),
        ("AGREEMENT", "Agreement")]
    assert verdicts[0].error == "negated or hedged: There is no AGREEMENT yet."
    assert verdicts[1].error == "both AGREEMENT and MORE DEBATE"
    assert "Judge: (no clear verdict)" in user_text(made[M].requests[1])
    assert [c.rounds for c in t.of_type(TopicClosed)] == [3]


def test_scripted_model_answers_the_plain_judge_from_its_script(make_scenario, tmp_path):
    out = tmp_path / "run"
    path = make_scenario(topics=1, extra=TEXT_NO_REASON)
    assert run_scenario(path, out, models=["scripted", "judge=scripted:MORE_DEBATE,GARBAGE,AGREEMENT"]) == 0
    t = conference(out)
    assert [(v.verdict, v.raw) for v in t.of_type(Verdict)] == [
        ("MORE_DEBATE", "MORE DEBATE"), ("UNPARSED", "I think there is no AGREEMENT yet, maybe DONE?"),
        ("AGREEMENT", "AGREEMENT")]


def test_judging_without_a_judge_is_an_error(make_scenario):
    with pytest.raises(ScenarioError) as info:
        load_scenario(make_scenario(judge=False, extra=TEXT_NO_REASON))
    assert info.value.key == ("judging",) and "no judge is declared" in str(info.value)
