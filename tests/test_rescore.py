"""Re-scoring a finished transcript: new evaluator scores and judge meta-evaluation (Table 5)."""

from __future__ import annotations

import asyncio

import pytest

from moot.cli import main
from moot.models.calls import RetryPolicy
from moot.models.scripted import ScriptedChatCompletionClient
from moot.rescore import Rescorer, judge_decisions
from moot.transcript import Message, Score, load


@pytest.fixture
def finished(make_scenario, tmp_path):
    """A two-topic run: topic 1 needs two rounds (MORE_DEBATE, AGREEMENT), topic 2 one."""
    scenario = make_scenario(topics=2)
    out = tmp_path / "run.jsonl"
    code = main([str(scenario), "--model", "judge=scripted:MORE_DEBATE,AGREEMENT,AGREEMENT",
                 "--out", str(out), "--quiet"])
    assert code == 0
    return out


def test_score_appends_to_a_copy_and_prints_table(finished, tmp_path, capsys):
    original = finished.read_bytes()
    out = tmp_path / "rescored.jsonl"
    code = main(["score", str(finished), "--role", "evaluator=scripted", "--role", "grader=scripted",
                 "--out", str(out)])
    assert code == 0
    assert finished.read_bytes() == original, "the original transcript must not change"
    assert out.read_bytes().startswith(original)
    new = load(out).events[len(load(finished).events):]
    debate = [e for e in new if isinstance(e, Score) and e.kind == "debate"]
    grades = [e for e in new if isinstance(e, Score) and e.kind == "judge_decision"]
    assert [s.topic for s in debate] == [0, 1]
    assert all(s.model == "scripted" and s.parsed and s.overall == 7 for s in debate)
    judge_turns = [m.turn for m in load(finished).of_type(Message) if m.action == "judge"]
    assert [g.turn for g in grades] == judge_turns and len(judge_turns) == 3
    assert [e.seq for e in load(out).events] == list(range(1, len(load(out).events) + 1))
    printed = capsys.readouterr().out
    assert "| 1 | 1 | 1 | MORE_DEBATE | 1 |" in printed
    assert "| 2 | 1 | 2 | AGREEMENT | 1 |" in printed
    assert "| mean | | | | 1.00 | 3 of 3 graded |" in printed
    assert printed.rstrip().endswith(f"transcript: {out}")


def test_grader_sees_the_topic_up_to_each_decision_only(finished):
    transcript = load(finished)
    client = ScriptedChatCompletionClient()
    rescorer = Rescorer(transcript, RetryPolicy(attempts=1, backoff_s=0))
    asyncio.run(rescorer.grade(client, "scripted"))
    messages = transcript.of_type(Message)
    for decision, request in zip(judge_decisions(transcript), client.requests):
        prompt = str(request["messages"][-1].content)
        judge = decision.judge
        seen = [m for m in messages if m.topic == judge.topic and m.turn < judge.turn]
        later = [m for m in messages if m.turn > judge.turn and m.action == "speak"]
        assert [m.turn for m in decision.debate] == [m.turn for m in seen]
        assert prompt.count("Alice:") == sum(m.speaker == "Alice" for m in seen)
        assert judge.content.strip() in prompt
        assert len(later) == 0 or prompt.count("Alice:") < sum(m.speaker == "Alice" for m in messages)


def test_unparsed_grade_is_recorded_not_guessed(finished, tmp_path):
    class Garbage(ScriptedChatCompletionClient):
        def _reply(self, messages, output):
            return "ten out of ten"

    transcript = load(finished)
    grades = asyncio.run(Rescorer(transcript, RetryPolicy(attempts=1, backoff_s=0)).grade(Garbage(), "x"))
    assert grades and all(not g.parsed and g.raw == "ten out of ten" and g.overall is None for g in grades)


@pytest.mark.parametrize("args", [["--role", "judge=scripted"], ["--role", "evaluator=nope:x"]])
def test_bad_roles_exit_2(finished, args, capsys):
    assert main(["score", str(finished), *args]) == 2
    assert "error:" in capsys.readouterr().err


def test_existing_out_is_not_overwritten(finished, tmp_path):
    out = tmp_path / "taken.jsonl"
    out.write_text("keep", encoding="utf-8")
    assert main(["score", str(finished), "--role", "evaluator=scripted", "--out", str(out)]) == 2
    assert out.read_text(encoding="utf-8") == "keep"
