"""Full conferences on the scripted model: routing, recorded events and what each agent saw."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_support import conference, run_scenario, without_calls

from moot.cli import main
from moot.log.events import Call, Message, RunFinished, RunStarted
from moot.protocols.conference.events import Score, TopicClosed, Verdict
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.scenario.load import scenario_hash

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
M, A, B, J, E = "Moderator", "Alice", "Bob", "Judge", "Evaluator"


class Saying(ScriptedChatCompletionClient):
    """A scripted model whose plain turns are a fixed text."""

    def __init__(self, text: str, **kwargs):
        super().__init__(**kwargs)
        self.text = text

    def _text_reply(self, messages):
        return self.text


def run(path: Path, out: Path, clients: dict | None = None, models=("scripted",)):
    code = run_scenario(path, out, models, clients)
    return code, conference(out)


def clients(judge=(), **others) -> dict:
    made = {name: ScriptedChatCompletionClient() for name in (M, A, B, E)}
    made[J] = ScriptedChatCompletionClient(list(judge))
    return {**made, **others}


def rows(transcript) -> list[tuple]:
    return [(m.turn, m.speaker, m.action, m.part, m.round) for m in transcript.of_type(Message)]


def kinds(transcript) -> list[str]:
    return without_calls(transcript)


def user_text(request) -> str:
    return request["messages"][-1].content


def test_drug_policy_cli_run_routes_like_the_paper(tmp_path, capsys):
    out = tmp_path / "run"
    code = main([str(SCENARIOS / "drug_policy.yaml"), "--model", "scripted",
                 "--model", "judge=scripted:MORE_DEBATE,AGREEMENT", "--out", str(out)])
    stdout = capsys.readouterr().out
    assert code == 0
    assert stdout.splitlines()[-2] == f"transcript: {out / 'conference.jsonl'}"
    assert stdout.splitlines()[-1] == f"run: {out} conferences=1 backend_calls=21 cache_hits=0 unparsed=0"
    assert "Stop: completed — all topics closed" in stdout
    assert "Topic 1: develop a set of criteria for assessing drug policy outcomes — closed by agreement after 2 round(s)" in stdout
    t = conference(out)
    p1, p2 = "Participant_1", "Participant_2"
    expected = [(M, "open", 0, 1), (p1, "speak", 0, 1), (p2, "speak", 0, 1), (J, "judge", 0, 1),
                (M, "continue", 0, 2), (p1, "speak", 0, 2), (p2, "speak", 0, 2), (J, "judge", 0, 2),
                (E, "evaluate", 0, 2), ("Assessor", "assess", 0, 2)]  # topic 1 has a reference outcome
    for topic in (1, 2):
        expected += [(M, "open", topic, 1), (p1, "speak", topic, 1), (p2, "speak", topic, 1),
                     (J, "judge", topic, 1), (E, "evaluate", topic, 1)]
    expected += [(M, "close", None, 1)]
    assert rows(t) == [(i, *row) for i, row in enumerate(expected, 1)]
    assert [e.seq for e in t.events] == list(range(1, len(t.events) + 1))
    assert kinds(t)[:16] == ["run_started", "message", "message", "message", "message", "verdict",
                             "message", "message", "message", "message", "verdict", "topic_closed",
                             "message", "score", "message", "coverage"]
    assert kinds(t)[-2:] == ["message", "run_finished"]
    events = t.events  # every turn's call (exactly what was sent) is recorded just before its message
    calls = [i for i, e in enumerate(events) if isinstance(e, Call)]
    assert len(calls) == 21 and all(isinstance(events[i + 1], Message) for i in calls)
    assert all(events[i].role == events[i + 1].speaker and events[i].reply == events[i + 1].content for i in calls)
    assert all(events[i].messages[0]["type"] == "SystemMessage" for i in calls)
    assert [(v.turn, v.topic, v.round, v.verdict) for v in t.of_type(Verdict)] == [
        (4, 0, 1, "MORE_DEBATE"), (8, 0, 2, "AGREEMENT"), (14, 1, 1, "AGREEMENT"), (19, 2, 1, "AGREEMENT")]
    assert [(c.topic, c.rounds, c.closed_by) for c in t.of_type(TopicClosed)] == [
        (0, 2, "agreement"), (1, 1, "agreement"), (2, 1, "agreement")]
    assert [(s.turn, s.topic, s.overall, s.parsed) for s in t.of_type(Score)] == [
        (9, 0, 7, True), (15, 1, 7, True), (20, 2, 7, True)]
    started, finished = t.started, t.finished
    assert started.models == {M: "scripted", p1: "scripted", p2: "scripted",
                              J: "scripted:MORE_DEBATE,AGREEMENT", E: "scripted", "Assessor": "scripted"}
    assert started.scenario_sha256 == scenario_hash(SCENARIOS / "drug_policy.yaml")
    assert (finished.status, finished.stop_reason) == ("completed", "all topics closed")
    assert finished.totals["messages"] == 21 and finished.totals["by_role"]["judge"]["messages"] == 4


def test_explicit_clients_judge_sees_the_whole_conference_by_default(make_scenario, tmp_path):
    made = clients(judge=["MORE_DEBATE", "AGREEMENT", "AGREEMENT"])
    code, t = run(make_scenario(topics=2), tmp_path / "run", made)
    assert code == 0 and t.completed
    judge = made[J].requests
    assert [r["output"].__name__ for r in judge] == ["JudgeVerdict"] * 3
    assert [r["output"] for r in made[A].requests] == [None] * 3
    assert len(made[E].requests) == 2 and len(made[M].requests) == 4  # open, continue, open, close
    first, second, third = (user_text(r) for r in judge)
    assert first.startswith("Conversation so far:\nTask: Test conference\n\nDecide the test questions.\n\nModerator: ")
    assert "topic number 1" in first and "topic number 2" not in first and first.count("\n\nAlice: ") == 1
    assert "Judge: MORE_DEBATE: scripted more_debate" in second  # its own earlier verdict, in words
    assert second.count("\n\nAlice: ") == 2
    # topic 2: the whole conference, topic 1 and its evaluation included (an AutoGen group chat)
    assert "topic number 2" in third and "topic number 1" in third and third.count("\n\nAlice: ") == 3
    assert "Judge: AGREEMENT: scripted agreement" in third and "Evaluator: Scores: clarity=7" in third
    assert "not shown" not in third
    assert judge[2]["messages"][0].content.startswith("You are Judge, the judge of a decision conference.")


def test_participant_text_with_agreement_or_done_does_not_end_a_topic(make_scenario, tmp_path):
    made = clients(judge=["MORE_DEBATE", "MORE_DEBATE", "AGREEMENT"],
                   **{A: Saying("AGREEMENT"), B: Saying("DONE. AGREEMENT. TERMINATE")})
    code, t = run(make_scenario(topics=1, max_rounds=3), tmp_path / "run", made)
    assert code == 0 and t.completed
    assert [m.content for m in t.of_type(Message) if m.speaker == A] == ["AGREEMENT"] * 3
    assert all(m.decision is None for m in t.of_type(Message) if m.role == "participant")
    assert [(v.round, v.verdict) for v in t.of_type(Verdict)] == [(1, "MORE_DEBATE"), (2, "MORE_DEBATE"), (3, "AGREEMENT")]
    assert [(c.rounds, c.closed_by) for c in t.of_type(TopicClosed)] == [(3, "agreement")]
    assert len(t.of_type(Message)) == 1 + 3 * 3 + 2 + 1 + 1  # open, 3 x (A, B, judge), continue x2, eval, close


def test_unparsed_judge_verdict_is_recorded_and_round_cap_ends_topic(make_scenario, tmp_path):
    made = clients(judge=["GARBAGE", "GARBAGE"])
    code, t = run(make_scenario(topics=1, max_rounds=2), tmp_path / "run", made)
    assert code == 0 and t.completed
    verdicts = t.of_type(Verdict)
    raw = "I think there is no AGREEMENT yet, maybe DONE?"
    assert [(v.turn, v.round, v.verdict, v.raw) for v in verdicts] == [(4, 1, "UNPARSED", raw), (8, 2, "UNPARSED", raw)]
    assert all(v.error.startswith("not JSON") for v in verdicts)
    assert [m.decision for m in t.of_type(Message) if m.action == "judge"] == ["UNPARSED", "UNPARSED"]
    assert [(c.topic, c.rounds, c.closed_by) for c in t.of_type(TopicClosed)] == [(0, 2, "round_cap")]
    assert [m.action for m in t.of_type(Message)][-2:] == ["evaluate", "close"]
    assert "(unparsed reply) I think there is no AGREEMENT yet" in user_text(made[M].requests[1])


@pytest.mark.parametrize("participants", [3, 4])
def test_n_participants_speak_in_order_every_round(make_scenario, tmp_path, participants):
    names = ["Alice", "Bob", "Carol", "Dave"][:participants]
    code, t = run(make_scenario(topics=1, participants=participants), tmp_path / "run",
                  models=["scripted", "judge=scripted:MORE_DEBATE"])
    speakers = [m.speaker for m in t.of_type(Message)]
    assert speakers == [M, *names, J, M, *names, J, E, M]
    assert code == 0 and t.completed


def test_on_more_debate_participants_skips_the_moderator(make_scenario, tmp_path):
    path = make_scenario(topics=1, extra="routing:\n  on_more_debate: participants\n")
    _, t = run(path, tmp_path / "run", models=["scripted", "judge=scripted:MORE_DEBATE"])
    assert [(m.speaker, m.round) for m in t.of_type(Message)] == [
        (M, 1), (A, 1), (B, 1), (J, 1), (A, 2), (B, 2), (J, 2), (E, 2), (M, 1)]


def test_without_judge_scenario_moderator_decides(tmp_path, capsys):
    out = tmp_path / "run"
    code = main([str(SCENARIOS / "drug_policy_no_judge.yaml"), "--model", "scripted",
                 "--model", "moderator=scripted:MORE_DEBATE,NEXT_TOPIC", "--out", str(out), "--quiet"])
    assert code == 0 and capsys.readouterr().out.splitlines()[-2] == f"transcript: {out / 'conference.jsonl'}"
    t = conference(out)
    p1, p2 = "Participant_1", "Participant_2"
    assert [(m.speaker, m.action, m.part, m.round) for m in t.of_type(Message)][:10] == [
        (M, "open", 0, 1), (p1, "speak", 0, 1), (p2, "speak", 0, 1), (M, "decide", 0, 1),
        (p1, "speak", 0, 2), (p2, "speak", 0, 2), (M, "decide", 0, 2), (E, "evaluate", 0, 2),
        ("Assessor", "assess", 0, 2), (M, "open", 1, 1)]
    assert [(v.speaker, v.topic, v.verdict) for v in t.of_type(Verdict)] == [
        (M, 0, "MORE_DEBATE"), (M, 0, "NEXT_TOPIC"), (M, 1, "NEXT_TOPIC"), (M, 2, "NEXT_TOPIC")]
    assert [(c.rounds, c.closed_by) for c in t.of_type(TopicClosed)] == [(2, "moderator"), (1, "moderator"), (1, "moderator")]
    assert "Judge" not in {m.speaker for m in t.of_type(Message)}
    assert t.finished.status == "completed" and len(t.of_type(Score)) == 3


def test_max_messages_stops_the_run(make_scenario, tmp_path, capsys):
    path = make_scenario(topics=3, max_messages=6)
    out = tmp_path / "run"
    assert main([str(path), "--out", str(out), "--quiet"]) == 0
    t = conference(out)
    assert [m.turn for m in t.of_type(Message)] == [1, 2, 3, 4, 5, 6]
    assert (t.finished.status, t.finished.stop_reason) == ("completed", "max_messages (6) reached")
    assert kinds(t)[-1] == "run_finished" and len(t.of_type(RunFinished)) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2] == f"transcript: {out / 'conference.jsonl'}"
    assert "Stop: completed — max_messages (6) reached" in lines
    assert "Topic 2: topic number 2 — not closed" in lines


def test_summary_lists_topics_verdicts_and_usage(make_scenario, tmp_path, capsys):
    out = tmp_path / "run"
    assert main([str(make_scenario(topics=1)), "--out", str(out), "--model", "judge=scripted:GARBAGE"]) == 0
    text = capsys.readouterr().out
    assert "=== Topic 1/1: topic number 1 ===" in text  # live output
    summary = text[text.index("== Summary: Test conference"):].splitlines()
    assert summary[1] == "Topic 1: topic number 1 — closed by agreement after 2 round(s)"
    assert summary[2].startswith("  round 1: Judge → UNPARSED (raw: 'I think there is no AGREEMENT")
    assert summary[3] == "  round 2: Judge → AGREEMENT"
    assert any(line.startswith("  participant     4 msg    4 calls") for line in summary)
    assert summary[-2] == f"transcript: {out / 'conference.jsonl'}"


def test_api_key_never_reaches_the_transcript(make_scenario, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-from-env-0123456789")
    out = tmp_path / "run"
    code = main([str(make_scenario(topics=1)), "--model", "scripted", "--api-key", "sk-secret-from-cli-987654",
                 "--base-url", "http://127.0.0.1:9/v1", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0
    data = "".join(p.read_text(errors="replace") for p in out.iterdir() if p.is_file())
    for secret in ("sk-secret-from-env-0123456789", "sk-secret-from-cli-987654", "sk-secret"):
        assert secret not in data and secret not in captured.out and secret not in captured.err
    started = conference(out).started
    assert isinstance(started, RunStarted)
    assert started.settings["backends"]["openai_base_urls"] == ["http://127.0.0.1:9/v1"]


def test_a_constant_or_monotone_written_score_set_is_kept_and_flagged(make_scenario, tmp_path, capsys):
    """The scripted evaluator writes 7 for every criterion: kept as written, flagged as suspect in
    the transcript and the summary (llama_cpp.server's structured output gave 1, 2, ..., 10)."""
    from moot.protocols.conference.turns import suspect_of

    assert [suspect_of(v) for v in ([7, 7, 7], [1, 2, 3], [9, 5, 2], [3, 5, 4], [6])] == \
        ["constant", "monotone", "monotone", "", ""]
    out = tmp_path / "run"
    assert main([str(make_scenario(topics=1)), "--model", "scripted", "--out", str(out)]) == 0
    (score,) = conference(out).of_type(Score)
    assert score.method == "" and set(score.scores.values()) == {7} and score.suspect == "constant"
    assert "(suspect: constant scores)" in capsys.readouterr().out
