"""A person at a seat of the debate-style item protocols (`moot run --human SEAT`): COLA's analysts,
debaters and judger, S2MAD's debaters and judge, the negotiation's generator and discriminator (and
an LLM's seat), each with the scripted model beside a scripted person: the person's turns are
recorded as theirs, read as a model's would be (the outcome, consensus, the negotiation), the
seat's model is never asked, a seat that runs out of time is stood in for, a bad seat name is one
line naming the nearest, and a run killed while a seat waits asks nothing twice."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import moot
from moot.api.options import RunOptions
from moot.cli import main
from moot.kit.seats import ScriptedPerson, SeatSpec
from moot.log.events import Human, Message, RunResumed
from moot.log.transcript import Transcript, load

COLA = {"text": "Masks work, everyone should wear one.", "target": "masks"}
CLAIM = {"claim": "The bridge collapsed this morning.", "comments": ["Confirmed by the police.", "Fake, I drove over it."]}
REVIEW = {"text": "a gorgeous , witty , seductive movie ."}


def seated(scenario: str, inputs: dict, out: Path, person, *seats: SeatSpec) -> Transcript:
    result = moot.run(scenario, models="scripted", inputs=inputs, out=out,
                      options=RunOptions(seats=seats, person=person))
    assert result.status == "completed"
    (path,) = [p for p in out.glob("*.jsonl") if p.name != "results.jsonl"]
    return load(path)


class ByQuestion:
    """A person who answers each question by its key (a list: in turn), keeping what they were shown."""

    def __init__(self, **answers):
        self.answers = {k: list(v) if isinstance(v, list) else v for k, v in answers.items()}
        self.asked = []

    async def ask(self, asking, question, problem):
        self.asked.append((asking, question, problem))
        answer = self.answers[question.key]
        return answer.pop(0) if isinstance(answer, list) else answer


# ------------------------------------------------------------------------------------------ COLA
def test_a_person_judges_a_cola_item_from_the_arguments(tmp_path):
    person = ScriptedPerson(["maybe", "against", "They argue it badly."])
    t = seated("cola", COLA, tmp_path / "c", person, SeatSpec("judger"))
    assert t.outcome.prediction == "against" and t.outcome.decided_by == "judger (human)"
    assert t.outcome.explanation == "They argue it badly."
    assert not [c for c in t.calls if c.role == "judger"]  # the seat's model was never asked
    (said,) = [m for m in t.messages if m.role == "judger"]
    assert (said.source, said.decision, said.content) == ("human", "against", "They argue it badly.")
    (human,) = t.of_type(Human)
    assert human.answers == ["maybe", "against", "They argue it badly."] and human.seat == "judger"
    asking, question, problem = person.asked[1]
    assert question.options == ("favor", "against", "neutral") and problem.startswith("choose one of")
    arguments = [m.content for m in t.messages if m.role.startswith("debater_")]
    assert len(arguments) == 3 and all(a.strip()[:40] in asking.shown for a in arguments)  # shown its prompt


def test_a_person_argues_for_every_stance_and_the_judger_reads_them(tmp_path):
    person = ByQuestion(text=["For: they filter droplets.", "Against: they fog glasses.", "Neutral: it depends."])
    t = seated("cola", COLA, tmp_path / "c", person, SeatSpec("debaters"))
    said = {m.role: m.content for m in t.messages if m.source == "human"}
    assert said == {"debater_favor": "For: they filter droplets.", "debater_against": "Against: they fog glasses.",
                    "debater_neutral": "Neutral: it depends."}
    assert [a.speaker for a, _, _ in person.asked] == ["debater_favor", "debater_against", "debater_neutral"]
    assert all("masks" in q.prompt and "Masks work" in a.shown for a, q, _ in person.asked)
    assert not [c for c in t.calls if c.role.startswith("debater_")]
    (judger,) = [c for c in t.calls if c.role == "judger"]
    sent = " ".join(str(m["content"]) for m in judger.messages)
    assert all(text in sent for text in said.values())  # the judger's model read the person's arguments
    assert len(t.of_type(Human)) == 3


def test_a_cola_analyst_whose_time_runs_out_is_stood_in_for_by_its_model(tmp_path):
    t = seated("cola", COLA, tmp_path / "c", ScriptedPerson([]), SeatSpec("linguist", 0.2, "model"))
    (human,) = t.of_type(Human)
    assert human.fallback == "model" and human.answers == [] and human.speaker == "linguist"
    (said,) = [m for m in t.messages if m.role == "linguist"]
    assert said.source == "model" and said.turn == human.turn and t.events.index(human) > t.events.index(said)


def test_a_cola_seat_that_is_no_role_names_the_nearest(tmp_path, capsys):
    code = main(["cola", "--model", "scripted", "--human", "debater_favour", "--out", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 2 and err.strip().splitlines() == [
        "error: --human 'debater_favour': no such seat in this cola scenario (did you mean 'debater_favor'?)"]
    assert not (tmp_path / "c").exists()


# ------------------------------------------------------------------------------------------ S2MAD
@pytest.mark.parametrize("last,decided", [("real", "consensus"), ("fake", "judge")])
def test_a_person_debates_as_one_s2mad_debater_and_their_labels_are_read(tmp_path, last, decided):
    person = ByQuestion(text=["The police confirm it.", "Still confirmed.", "Confirmed again."],
                        label=["real", "fake", last])
    claim = {**CLAIM, "claim": "The bridge collapsed this morning. SCRIPTED_LABEL=real"}  # the other debater: real
    t = seated("s2mad", claim, tmp_path / "s", person, SeatSpec("debater_p"))
    mine = [m for m in t.messages if m.role == "debater_p"]
    assert [(m.action, m.round, m.source, m.decision) for m in mine] == [
        ("initial_opinion", 0, "human", "real"), ("debate", 1, "human", "fake"), ("debate", 2, "human", last)]
    assert not [c for c in t.calls if c.role == "debater_p"]
    (row,) = [r for r in map(json.loads, (tmp_path / "s" / "results.jsonl").read_text().splitlines())]
    assert row["answers"] == [["real", "real"], ["fake", "real"], [last, "real"]]  # the debate read the person's labels
    assert t.outcome.decided_by == decided and (decided == "judge") == bool([c for c in t.calls if c.role == "judge"])
    assert "The bridge collapsed" in person.asked[0][0].shown
    opponent = [c for c in t.calls if c.role == "debater_n" and c.stage == "debate"][0]
    assert "The police confirm it." in " ".join(str(m["content"]) for m in opponent.messages)


def test_a_person_judges_an_s2mad_claim_the_debaters_left_open(tmp_path):
    person = ByQuestion(text="Nobody saw it fall.", label="fake")
    split = {"claim": "The bridge collapsed. SCRIPTED_LABEL=real",  # debater_p is also shown a comment marked fake
             "comments": ["Confirmed by the police. SCRIPTED_SCORE=0.9 SCRIPTED_LABEL=fake", "Fake. SCRIPTED_SCORE=-0.4"]}
    t = seated("s2mad", split, tmp_path / "s", person, SeatSpec("judge"))
    assert t.outcome.prediction == "fake" and t.outcome.decided_by == "judge (human)"  # the debaters disagree
    (said,) = [m for m in t.messages if m.role == "judge"]
    assert said.source == "human" and not [c for c in t.calls if c.role == "judge"]


# ------------------------------------------------------------------------------------------ negotiation
def test_a_person_generates_in_both_negotiations_and_a_model_agrees(tmp_path):
    person = ByQuestion(text="Gorgeous and witty: praise.", decision="positive")
    t = seated("negotiation", REVIEW, tmp_path / "n", person, SeatSpec("generator"))
    mine = [m for m in t.messages if m.source == "human"]
    assert {(m.speaker, m.action, m.decision) for m in mine} == {
        ("first", "first->second", "positive"), ("second", "second->first", "positive")}
    assert all(m.content == "Gorgeous and witty: praise.\nDecision: positive" for m in mine)
    generated = {(c.role, c.stage) for c in t.calls if "->" in c.stage}
    assert ("first", "first->second") not in generated and ("second", "second->first") not in generated
    assert t.outcome.prediction == "positive"  # the scripted discriminators agreed with the person


def test_a_person_discriminates_says_no_and_explains(tmp_path):
    person = ByQuestion(attitude=["maybe", "no", "no", "no", "no", "no", "no"], decision="negative",
                        explanation="Seductive is said with irony.")
    t = seated("negotiation", REVIEW, tmp_path / "n", person, SeatSpec("discriminator"))
    mine = [m for m in t.messages if m.source == "human"]
    assert mine and all(m.decision == "no, negative" for m in mine)
    assert '"explanation": "Seductive is said with irony."' in mine[0].content
    assert person.asked[1][2].startswith("choose one of")  # "maybe" did not read
    revised = [c for c in t.calls if c.stage == "first->second" and c.role == "first"]
    assert revised and "Seductive is said with irony." in str(revised[-1].messages)  # the generator read it
    assert "no consensus" in t.outcome.raw  # never agreed with the generator


def test_a_person_at_an_llm_seat_takes_both_its_roles_and_agreeing_is_not_asked_why(tmp_path):
    person = ByQuestion(attitude="yes", text="Praise, plainly.", decision="positive")
    review = {"text": "a gorgeous , witty , seductive movie . SCRIPTED_LABEL=positive"}
    t = seated("negotiation", review, tmp_path / "n", person, SeatSpec("second"))
    assert sorted((a.label, q.key) for a, q, _ in person.asked) == [  # both negotiations run at once
        ("second (discriminator)", "attitude"), ("second (generator)", "decision"), ("second (generator)", "text")]
    mine = sorted((m.action, m.content, m.decision) for m in t.messages if m.source == "human")
    assert mine == [("first->second", '{"attitude": "yes", "decision": "positive", "explanation": ""}', "yes, positive"),
                    ("second->first", "Praise, plainly.\nDecision: positive", "positive")]
    assert t.outcome.raw == "first->second: positive; second->first: positive"  # a consensus both ways
    assert not [c for c in t.calls if c.role == "second" and not c.stage.startswith("demo")]


def test_a_negotiation_seat_that_is_no_role_names_the_nearest(tmp_path, capsys):
    code = main(["negotiation", "--model", "scripted", "--human", "generater", "--out", str(tmp_path / "n")])
    assert code == 2 and "no such seat in this negotiation scenario (did you mean 'generator'?)" in \
        capsys.readouterr().err


# ------------------------------------------------------------------------------------------ resume
def test_a_cola_run_killed_while_the_judger_waits_asks_nothing_twice(tmp_path):
    out = tmp_path / "c"
    argv = [sys.executable, "-m", "moot", "cola", "--model", "scripted", "--input", f"text={COLA['text']}",
            "--input", "target=masks", "--human", "judger", "--out", str(out), "--quiet"]
    first = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (out / "seats" / "judger.json").exists():
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.05)
    first.kill()
    first.communicate(timeout=60)
    again = subprocess.run(argv, input=b"favor\nThey filter droplets.\n.\n", capture_output=True, timeout=120)
    assert again.returncode == 0, again.stderr
    (path,) = out.glob("item-*.jsonl")
    t = load(path)
    assert [m.turn for m in t.messages] == list(range(1, len(t.messages) + 1))
    assert len([m for m in t.of_type(Message) if m.role == "linguist"]) == 1 and len(t.of_type(RunResumed)) == 1
    assert t.outcome.prediction == "favor" and [h.answers for h in t.of_type(Human)] == [
        ["favor", "They filter droplets."]]
