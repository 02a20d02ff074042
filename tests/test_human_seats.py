"""A person at a seat (`moot run --human SEAT`) in a scripted conference: a scripted person (the
seat's input function fed from a list) and the terminal (stdin piped), a seat timing out to its
model or to a skipped turn, bad seat names, and a run stopped while it waits for the person."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from run_support import conference

import moot
from moot.api.options import RunOptions
from moot.cli import main, replay
from moot.kit.seats import Question, ScriptedPerson, SeatSpec
from moot.errors import UsageError
from moot.log.events import Call, Human, Message, RunResumed
from moot.log.transcript import load
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.protocols.conference.events import Score, Verdict

J, E = "Judge", "Evaluator"


def seated(scenario: Path, out: Path, person: ScriptedPerson, *seats: SeatSpec, clients=None):
    options = RunOptions(seats=seats, person=person, clients=clients)
    return moot.run(str(scenario), models="scripted", out=out, options=options)


def test_a_human_judge_decides_through_the_group_chat(make_scenario, tmp_path):
    person = ScriptedPerson(["maybe", "2", "Costs were not discussed", "agreement", "1"])  # "maybe": asked again
    judge = ScriptedChatCompletionClient(["AGREEMENT"] * 5)
    result = seated(make_scenario(topics=2), tmp_path / "run", person, SeatSpec("judge"), clients={J: judge})
    assert result.status == "completed"
    t = conference(tmp_path / "run")
    verdicts = [(v.topic, v.round, v.verdict) for v in t.of_type(Verdict)]
    assert verdicts == [(0, 1, "MORE_DEBATE"), (0, 2, "AGREEMENT"), (1, 1, "AGREEMENT")]
    assert judge.requests == []  # the seat's model never answered
    said = [m for m in t.messages if m.speaker == J]
    assert [m.source for m in said] == ["human"] * 3 and all(m.model == "" for m in said)
    assert {m.source for m in t.messages if m.speaker != J} == {"model"}
    human = t.of_type(Human)
    assert [h.answers for h in human] == [["maybe", "2", "Costs were not discussed"], ["agreement"], ["1"]]
    assert [(h.seat, h.speaker, h.fallback) for h in human] == [("judge", J, "")] * 3
    assert [h.turn for h in human] == [m.turn for m in said]
    for h in human:  # each human record comes just before the message it gave
        assert t.events[t.events.index(h) + 1] == next(m for m in said if m.turn == h.turn)
    asked = [(q.key, q.options, problem) for _, q, problem in person.asked]
    assert asked[:2] == [("verdict", ("AGREEMENT", "MORE_DEBATE"), ""),
                         ("verdict", ("AGREEMENT", "MORE_DEBATE"), "choose one of AGREEMENT, MORE_DEBATE (or its number)")]
    assert person.asked[0][0].where == "T1 R1" and person.asked[0][0].label == J
    assert [q.key for _, q, _ in person.asked] == ["verdict"] * 2 + ["reason", "verdict", "verdict"]  # why more debate


def test_a_human_judges_reason_reaches_the_moderator_and_reads_in_words(make_scenario, tmp_path):
    person = ScriptedPerson(["MORE_DEBATE", "Costs <b>were</b> not discussed", "AGREEMENT"])
    seated(make_scenario(topics=1), tmp_path / "run", person, SeatSpec("judge"))
    t = conference(tmp_path / "run")
    said = [m for m in t.messages if m.speaker == J]
    assert json.loads(said[0].content) == {"verdict": "MORE_DEBATE", "reason": "Costs <b>were</b> not discussed"}
    after = [c for c in t.calls if c.stage == "continue" and c.seq > said[0].seq]
    assert "Costs <b>were</b> not discussed" in json.dumps(after[0].messages)  # the moderator is told why
    text = moot.document(tmp_path / "run", "md")
    assert "MORE DEBATE — Costs" in text and '"verdict": "MORE_DEBATE"' not in text
    shown = io.StringIO()
    assert replay.run([str(tmp_path / "run"), "--no-delay"], stream=shown) == 0
    assert "(judge, human, " in shown.getvalue() and "MORE DEBATE — Costs <b>were</b> not discussed\n" in shown.getvalue()
    html = moot.document(tmp_path / "run", "html")
    assert "MORE DEBATE — Costs &lt;b&gt;were&lt;/b&gt; not discussed" in html and "<b>were" not in html


def test_a_judge_in_the_papers_form_or_without_forwarding_is_asked_no_reason(make_scenario, tmp_path):
    for n, judging in enumerate(("{form: text}", "{forward_reason: false}")):
        scenario = make_scenario(topics=1, extra=f"judging: {judging}\n", name=f"s{n}.yaml")
        person = ScriptedPerson(["MORE_DEBATE", "AGREEMENT"])
        seated(scenario, tmp_path / f"run{n}", person, SeatSpec("judge"))
        assert [q.key for _, q, _ in person.asked] == ["verdict", "verdict"], judging


def test_a_human_evaluator_scores_every_criterion(make_scenario, tmp_path):
    answers = ["11", *[str(n) for n in range(1, 11)], "6", "Clear enough.\nBut short."]
    person = ScriptedPerson(answers)
    judge = ScriptedChatCompletionClient(["AGREEMENT"])
    result = seated(make_scenario(topics=1), tmp_path / "run", person, SeatSpec("Evaluator"), clients={J: judge})
    assert result.status == "completed"
    t = conference(tmp_path / "run")
    (score,) = t.of_type(Score)
    assert score.parsed and score.overall == 6 and score.rationale == "Clear enough.\nBut short."
    assert list(score.scores.values()) == list(range(1, 11))
    assert person.asked[1][2] == "a whole number from 1 to 10"  # 11 is out of the scale
    (human,) = t.of_type(Human)
    assert human.answers == answers and len(human.asked) == 12


@pytest.mark.parametrize("fallback", ["model", "skip"])
def test_a_seat_whose_time_runs_out_falls_back_as_declared(make_scenario, tmp_path, fallback):
    person = ScriptedPerson([])  # never answers
    judge = ScriptedChatCompletionClient(["AGREEMENT"] * 4)
    scenario = make_scenario(topics=1, max_rounds=2)
    result = seated(scenario, tmp_path / "run", person, SeatSpec("judge", 0.3, fallback), clients={J: judge})
    assert result.status == "completed"
    t = conference(tmp_path / "run")
    human = t.of_type(Human)
    assert human and all(h.fallback == fallback and h.limit_s == 0.3 and h.answers == [] for h in human)
    assert all(h.seconds >= 0.3 for h in human)
    said = [m for m in t.messages if m.speaker == J]
    if fallback == "model":
        assert [v.verdict for v in t.of_type(Verdict)] == ["AGREEMENT"]
        assert [m.source for m in said] == ["model"] and len(judge.requests) == 1
        assert isinstance(t.events[t.events.index(human[0]) - 1], Call)  # the stand-in's call, then the record
    else:  # a skipped verdict is unparsed, which routes as more debate, up to the round cap
        assert [v.verdict for v in t.of_type(Verdict)] == ["UNPARSED", "UNPARSED"] and judge.requests == []
        assert [m.content for m in said] == ["", ""]
    assert not (tmp_path / "run" / "seats").exists()  # nothing is pending
    what = "its model answered" if fallback == "model" else "the turn was skipped"
    assert f"seat judge: no answer within 0.3s; {what}" in moot.document(tmp_path / "run", "html")


def test_the_terminal_seat_reads_piped_answers(make_scenario, tmp_path, monkeypatch, capsys):
    typed = "I would measure harm.\nAnd cost.\n.\n\x1b[31mOK\n.\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
    out = tmp_path / "run"
    code = main([str(make_scenario(topics=1, max_rounds=2)), "--model", "scripted", "--model", "judge=scripted:MORE_DEBATE",
                 "--human", "Alice", "--out", str(out)])
    shown = capsys.readouterr().out
    assert code == 0
    assert "── your turn · seat Alice · Alice · T1 R1 · speak ──" in shown
    assert "[T1 R1] Alice (speak, human," in shown and "\x1b[31m" not in shown
    t = conference(out)
    alice = [m for m in t.messages if m.speaker == "Alice"]
    assert [m.content for m in alice] == ["I would measure harm.\nAnd cost.", "\x1b[31mOK"]  # stored exactly
    assert [h.answers for h in t.of_type(Human)] == [["I would measure harm.\nAnd cost."], ["\x1b[31mOK"]]
    assert moot.document(out, "html").count('data-source="human"') == 2
    assert "· human ·" in moot.document(out, "md")


def test_a_seat_that_is_no_agent_or_role_is_one_line_naming_the_nearest(make_scenario, tmp_path, capsys):
    code = main([str(make_scenario()), "--model", "scripted", "--human", "judg", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and err.strip().splitlines() == [
        "error: --human 'judg': no such seat in this conference scenario (did you mean 'judge'?)"]
    assert not (tmp_path / "r").exists()
    code = main([str(make_scenario()), "--model", "scripted", "--human", "judge:soon", "--out", str(tmp_path / "r")])
    assert code == 2 and "the time limit must be seconds, got 'soon'" in capsys.readouterr().err
    for limit in ("nan", "inf", "-inf", "0", "-3"):  # float() takes the first three: they are no time limit
        code = main([str(make_scenario()), "--model", "scripted", "--human", f"judge:{limit}:model",
                     "--out", str(tmp_path / "r")])
        assert code == 2 and "must be a positive number of seconds" in capsys.readouterr().err, limit
    assert not (tmp_path / "r").exists()


def test_seats_of_a_conference():
    from moot.protocols.conference.protocol import seats
    from moot.api.running import load_scenario

    found = seats(load_scenario("drug_policy"))
    assert found["participants"] == found["participant"] == ("Participant_1", "Participant_2")
    assert found["judge"] == ("Judge",) and found["Judge"] == ("Judge",) and "assessor" not in found
    with pytest.raises(UsageError, match="Judge is seated already"):
        from moot.kit.seats import seated_agents
        seated_agents(found, [SeatSpec("judge"), SeatSpec("Judge")], "conference")


@pytest.mark.parametrize("text,value", [("2", "MORE_DEBATE"), ("more debate", "MORE_DEBATE"), (" Agreement ", "AGREEMENT"),
                                        ("3", None), ("agree", None)])
def test_a_closed_answer_reads_as_an_allowed_one_or_not_at_all(text, value):
    assert Question("v", "?", ("AGREEMENT", "MORE_DEBATE")).read(text)[0] == value


def wait_for(path: Path, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT])
def test_a_run_stopped_while_waiting_continues_at_the_same_turn(make_scenario, tmp_path, how):
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "moot", str(make_scenario(topics=1, max_rounds=2)), "--model", "scripted",
            "--human", "judge", "--out", str(out), "--quiet"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    first = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    wait_for(out / "seats" / "judge.json", first)
    pending = json.loads((out / "seats" / "judge.json").read_text())
    assert (pending["speaker"], pending["where"], pending["questions"][0]["options"]) == (
        J, "T1 R1", ["AGREEMENT", "MORE_DEBATE"])
    first.send_signal(how)
    shown, err = first.communicate(timeout=60)
    assert first.returncode == (-9 if how == signal.SIGKILL else 130), err
    assert b"conversation so far" not in shown  # on screen already as it happened
    before = conference(out)
    assert [m.speaker for m in before.messages] == ["Moderator", "Alice", "Bob"]
    again = subprocess.run(argv, input=b"agreement\n", capture_output=True, env=env, timeout=120)
    assert again.returncode == 0, again.stderr
    recap = again.stdout.decode()  # the person resuming is shown the topic's turns before being asked
    start, asked = recap.index("The conversation so far on topic 1"), recap.index("Your verdict")
    assert start < recap.index("[T1 R1] Moderator: ") < recap.index("[T1 R1] Alice: ") < \
        recap.index("[T1 R1] Bob: ") < asked
    t = conference(out)
    assert [m.turn for m in t.messages] == list(range(1, len(t.messages) + 1))  # nothing said twice
    assert [m.speaker for m in t.messages][:4] == ["Moderator", "Alice", "Bob", J]
    assert len(t.of_type(RunResumed)) == 1 and [h.answers for h in t.of_type(Human)] == [["agreement"]]
    assert [v.verdict for v in t.of_type(Verdict)] == ["AGREEMENT"] and t.completed
    assert len([m for m in t.of_type(Message) if m.speaker == "Alice"]) == 1


def test_a_person_debates_as_one_agent_and_votes(tmp_path):
    person = ScriptedPerson(["It is against.", "against", "Still against.\nFirmly.", "2", "I change.", "favor"])
    options = RunOptions(seats=(SeatSpec("agent_1"),), person=person)
    result = moot.run("debate", models="scripted", inputs={"text": "Cats beat dogs.", "target": "cats"},
                      out=tmp_path / "d", options=options)
    assert result.status == "completed"
    (path,) = (tmp_path / "d").glob("item-*.jsonl")
    t = load(path)
    mine = [m for m in t.messages if m.speaker == "agent_1"]
    assert [(m.round, m.source, m.decision) for m in mine] == [(0, "human", "against"), (1, "human", "against"),
                                                               (2, "human", "favor")]
    assert mine[1].content == "Still against.\nFirmly."
    assert not [c for c in t.calls if c.role == "agent_1"]  # the seat's model was never asked
    assert "Cats beat dogs." in person.asked[0][0].shown  # shown the question the model would be
    assert "One agent solution" in person.asked[2][0].shown  # and the others' answers in round 1
    assert t.outcome.prediction == "favor"


def test_a_debate_stopped_while_waiting_asks_nothing_twice(tmp_path):
    out = tmp_path / "d"
    argv = [sys.executable, "-m", "moot", "debate", "--model", "scripted", "--input",
            "text=Cats beat dogs. SCRIPTED_LABEL=neutral", "--human", "agent_1", "--out", str(out), "--quiet"]
    first = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first.stdin.write(b"Round zero.\n.\nagainst\n")
    first.stdin.flush()
    pending = out / "seats" / "agent_1.json"
    deadline = time.monotonic() + 60
    while not (pending.exists() and '"round 1"' in pending.read_text(errors="replace")):
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.05)
    first.kill()
    first.communicate(timeout=60)
    again = subprocess.run(argv, input=b"Round one.\n.\nneutral\nRound two.\n.\nneutral\n", capture_output=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr
    (path,) = out.glob("item-*.jsonl")
    t = load(path)
    mine = [m for m in t.messages if m.speaker == "agent_1"]
    assert [(m.round, m.content, m.decision) for m in mine] == [(0, "Round zero.", "against"),
                                                                (1, "Round one.", "neutral"),
                                                                (2, "Round two.", "neutral")]
    assert [h.answers for h in t.of_type(Human)] == [["Round zero.", "against"], ["Round one.", "neutral"],
                                                    ["Round two.", "neutral"]]


def test_a_seat_answered_through_files_in_the_run_folder(make_scenario, tmp_path):
    """The hook a browser page uses: the pending file says what is asked, an answer file answers."""
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "moot", str(make_scenario(topics=1, max_rounds=2)), "--model", "scripted",
            "--human", "judge", "--human-from", "files", "--out", str(out), "--quiet"]
    running = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pending, answer = out / "seats" / "judge.json", out / "seats" / "judge.answer.json"
    for text, problem in (("perhaps", ""), ("AGREEMENT", "choose one of AGREEMENT, MORE_DEBATE (or its number)")):
        deadline = time.monotonic() + 60
        while not (pending.exists() and not answer.exists()
                   and json.loads(pending.read_text() or "{}").get("problem") == problem):
            assert running.poll() is None and time.monotonic() < deadline, running.communicate()
            time.sleep(0.05)
        asked = json.loads(pending.read_text())
        assert asked["asked"]["options"] == ["AGREEMENT", "MORE_DEBATE"] and "Alice" not in asked["shown"]
        (out / "seats" / "answer.tmp").write_text(json.dumps({"text": text}))
        os.replace(out / "seats" / "answer.tmp", answer)
    _, err = running.communicate(timeout=60)
    assert running.returncode == 0, err
    t = conference(out)
    assert [h.answers for h in t.of_type(Human)] == [["perhaps", "AGREEMENT"]]
    assert [v.verdict for v in t.of_type(Verdict)] == ["AGREEMENT"] and not (out / "seats").exists()


def test_a_queued_person_is_answered_from_elsewhere_in_the_process(make_scenario, tmp_path):
    import asyncio

    from moot.kit.seats import QueuedPerson

    out = tmp_path / "run"

    async def go():
        person = QueuedPerson()
        prepared = moot.prepare(str(make_scenario(topics=1)), models="scripted", out=out,
                                options=RunOptions(seats=(SeatSpec("judge"),), person=person))
        running = asyncio.ensure_future(prepared.run_async())
        while not (out / "seats" / "judge.json").exists():
            assert not running.done()
            await asyncio.sleep(0.01)
        await person.answer("agreement")
        return await running

    assert asyncio.run(go()).status == "completed"
    assert [h.answers for h in conference(out).of_type(Human)] == [["agreement"]]


def test_a_human_moderator_decides_when_to_move_on_without_a_judge(make_scenario, tmp_path):
    person = ScriptedPerson(["Welcome.", "more debate", "Go on, please.", "2", "Go on.", "next topic",
                             "We agree on it.", "Goodbye."])
    result = seated(make_scenario(topics=1, judge=False), tmp_path / "run", person, SeatSpec("moderator"))
    assert result.status == "completed"
    t = conference(tmp_path / "run")
    said = [(m.action, m.decision, m.source) for m in t.messages if m.speaker == "Moderator"]
    assert said == [("open", None, "human"), ("decide", "MORE_DEBATE", "human"), ("decide", "MORE_DEBATE", "human"),
                    ("decide", "NEXT_TOPIC", "human"), ("close", None, "human")]
    assert [(v.verdict, v.reason) for v in t.of_type(Verdict)] == [
        ("MORE_DEBATE", "Go on, please."), ("MORE_DEBATE", "Go on."), ("NEXT_TOPIC", "We agree on it.")]


class ByKind:
    """A person who writes the same turn and scores answer a 8, answer b 6."""

    def __init__(self):
        self.asked = []

    async def ask(self, asking, question, problem):
        self.asked.append((asking.where, question.key, asking.shown))
        return {"text": "I prefer the first.", "a": "8", "b": "6"}[question.key]


def test_a_person_referees_in_a_chateval_panel(tmp_path):
    from moot.protocols.chateval.events import Judgement

    person = ByKind()
    options = RunOptions(seats=(SeatSpec("referee_1"),), person=person)
    assert moot.run("chateval", models="scripted", out=tmp_path / "c", options=options).status == "completed"
    (path,) = [p for p in (tmp_path / "c").glob("*.jsonl") if p.name != "results.jsonl"]
    t = load(path)
    mine = [j for j in t.of_type(Judgement) if j.method == "human"]
    assert [(j.order, j.scores) for j in mine] == [("ab", {"a": 8.0, "b": 6.0}), ("ba", {"a": 8.0, "b": 6.0})]
    assert all(j.preference == "a" for j in mine)
    assert [k for _, k, _ in person.asked] == ["text", "text", "a", "b", "text", "text", "b", "a"]  # as shown: 1, then 2
    assert all(shown for _, _, shown in person.asked)  # shown the referee's prompt
    assert not [c for c in t.calls if c.role == "referee_1"]


def test_a_debater_whose_time_runs_out_is_stood_in_for_by_its_model(tmp_path):
    options = RunOptions(seats=(SeatSpec("agent_1", 0.2, "model"),), person=ScriptedPerson([]))
    assert moot.run("debate", models="scripted", inputs={"text": "x y"}, out=tmp_path / "d",
                    options=options).status == "completed"
    (path,) = (tmp_path / "d").glob("item-*.jsonl")
    t = load(path)
    mine = {m.turn: m for m in t.messages if m.speaker == "agent_1"}
    human = t.of_type(Human)
    assert len(human) == 3 and all(h.fallback == "model" and h.turn in mine for h in human)
    assert all(mine[h.turn].source == "model" and t.events.index(h) > t.events.index(mine[h.turn]) for h in human)
