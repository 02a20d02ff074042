"""`moot score`: a protocol's deciding role re-run with another model on a saved run — conference
evaluator and grader (Table 5), COLA judger, S2MAD judge (or its one agent), negotiation third LLM — appended to a
copy, never to the original, nobody else asked again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from moot.agents.prompts import default_templates
from moot.engine.unparsed import EXIT_UNPARSED
from moot.cli import main
from moot.log.events import Call, Message
from moot.protocols.conference.events import Score
from moot.models.engine import ModelEngine
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.protocols.registry import REGISTRY
from moot.protocols.conference.rescore import judge_decisions
from moot.engine.rescore import Job, rescore_units
from moot.log.transcript import load


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != "run.lock"}


def run(argv: list[str], out: Path) -> Path:
    """Run it; a run whose every answer is unparsed (exit 4) is a run to rescore too."""
    code = main(["run", *argv, "--out", str(out), "--quiet"])
    unparsed = all(r["prediction"] == "unparsed" for r in rows(out))
    assert code == (EXIT_UNPARSED if unparsed else 0)
    return out


def transcript_in(folder: Path) -> Path:
    (path,) = [p for p in folder.glob("*.jsonl") if p.name != "results.jsonl"]
    return path


def rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


@pytest.fixture
def finished(make_scenario, tmp_path) -> Path:
    """A two-topic conference: topic 1 needs two rounds (MORE_DEBATE, AGREEMENT), topic 2 one."""
    return run([str(make_scenario(topics=2)), "--model", "judge=scripted:MORE_DEBATE,AGREEMENT,AGREEMENT"],
               tmp_path / "conf")


# ---------------------------------------------------------------- conferences

def test_score_appends_to_a_copy_of_a_transcript_and_prints_table(finished, tmp_path, capsys):
    source = finished / "conference.jsonl"
    original = source.read_bytes()
    out = tmp_path / "rescored.jsonl"
    assert main(["score", str(source), "--role", "evaluator=scripted", "--role", "grader=scripted",
                 "--out", str(out)]) == 0
    assert source.read_bytes() == original, "the original transcript must not change"
    assert out.read_bytes().startswith(original)
    new = load(out).events[len(load(source).events):]
    debate = [e for e in new if isinstance(e, Score) and e.kind == "debate"]
    grades = [e for e in new if isinstance(e, Score) and e.kind == "judge_decision"]
    assert [s.topic for s in debate] == [0, 1]
    assert all(s.model == "scripted" and s.parsed and s.overall == 7 for s in debate)
    judge_turns = [m.turn for m in load(source).of_type(Message) if m.action == "judge"]
    assert [g.turn for g in grades] == judge_turns and len(judge_turns) == 3
    calls = [e for e in new if isinstance(e, Call)]
    assert {c.role for c in calls} <= {"evaluator", "grader"} and sum(c.role == "grader" for c in calls) == 3
    assert [e.seq for e in load(out).events] == list(range(1, len(load(out).events) + 1))
    printed = capsys.readouterr().out
    assert "| 1 | 1 | 1 | MORE_DEBATE | 7 |" in printed  # the scripted grader gives its score, 7
    assert "| 2 | 1 | 2 | AGREEMENT | 7 |" in printed
    assert "| mean | | | | 7.00 | 3 of 3 graded |" in printed
    assert printed.rstrip().endswith(f"transcript: {out}")


def test_score_a_conference_folder_into_a_new_folder(finished, capsys):
    before = files_of(finished)
    assert main(["score", str(finished), "--role", "grader=scripted"]) == 0
    assert files_of(finished) == before, "the original folder must not change"
    out = finished.with_name("conf-rescored-grader-scripted")
    meta = json.loads((out / "run.json").read_text())
    assert meta["rescored"]["roles"] == {"grader": "scripted"} and meta["rescored"]["from"] == str(finished.resolve())
    assert meta["models"]["grader"] == "scripted"
    copy = load(out / "conference.jsonl")
    assert len([s for s in copy.of_type(Score) if s.kind == "judge_decision"]) == 3
    assert [r["id"] for r in rows(out)] == ["conference"]
    assert (out / "cache.sqlite").exists()
    printed = capsys.readouterr().out
    assert "Table 5" in printed and f"run: {out} units=1" in printed
    # The same command again redoes it from the new folder's cache: no model is asked again.
    assert main(["score", str(finished), "--role", "grader=scripted"]) == 0
    assert "backend_calls=0 cache_hits=3" in capsys.readouterr().out
    assert len([s for s in load(out / "conference.jsonl").of_type(Score) if s.kind == "judge_decision"]) == 3


def rescore_with(transcript_path: Path, roles: dict, client, tmp_path: Path) -> Path:
    """Rescore one transcript in-process with `client` answering for every role's spec."""
    transcript = load(transcript_path)
    engine = ModelEngine(clients={spec: client for spec in roles.values()})
    out = tmp_path / "copy.jsonl"
    job = Job(REGISTRY.get(transcript.protocol), roles)
    (done,) = asyncio.run(rescore_units(job, [(transcript, None, out)], engine, 1))
    assert not done.failed, done.failed
    return out


def test_grader_sees_the_topic_up_to_each_decision_only(finished, tmp_path):
    source = finished / "conference.jsonl"
    transcript = load(source)
    client = ScriptedChatCompletionClient()
    rescore_with(source, {"grader": "scripted"}, client, tmp_path)
    messages = transcript.of_type(Message)
    decisions = judge_decisions(transcript)
    assert len(client.requests) == len(decisions) == 3
    for decision, request in zip(decisions, client.requests):  # asked in the order of the decisions
        judge = decision.judge
        prompt = str(request["messages"][-1].content)
        assert judge.content.strip() in prompt
        seen = [m for m in messages if m.part == judge.part and m.turn < judge.turn]
        assert [m.turn for m in decision.debate] == [m.turn for m in seen]
        assert prompt.count("Alice:") == sum(m.speaker == "Alice" for m in seen)
        assert prompt.count("Alice:") < sum(m.speaker == "Alice" for m in messages)


class Saying(ScriptedChatCompletionClient):
    """Answers every call with one text."""

    def __init__(self, text: str):
        super().__init__()
        self.text = text

    def _reply(self, messages, output):
        return self.text


def test_unparsed_grade_is_recorded_not_guessed(finished, tmp_path):
    out = rescore_with(finished / "conference.jsonl", {"grader": "scripted"}, Saying("ten out of ten"), tmp_path)
    grades = [s for s in load(out).of_type(Score) if s.kind == "judge_decision"]
    assert len(grades) == 3 and all(not g.parsed and g.raw == "ten out of ten" and g.overall is None for g in grades)


@pytest.mark.parametrize("args, says", [(["--role", "judge=scripted"], "ROLE one of evaluator, grader"),
                                        (["--role", "evaluator=nope:x"], "unknown model provider"),
                                        (["--role", "evaluater=scripted"], "did you mean 'evaluator'")])
def test_bad_roles_exit_2(finished, args, says, capsys):
    assert main(["score", str(finished), *args]) == 2
    assert says in capsys.readouterr().err


def test_existing_out_is_not_overwritten(finished, tmp_path):
    out = tmp_path / "taken.jsonl"
    out.write_text("keep", encoding="utf-8")
    assert main(["score", str(finished / "conference.jsonl"), "--role", "evaluator=scripted", "--out", str(out)]) == 2
    assert out.read_text(encoding="utf-8") == "keep"
    other = tmp_path / "other"
    run([str(finished.parent / "scenario.yaml")], other)
    assert main(["score", str(finished), "--role", "evaluator=scripted", "--out", str(other)]) == 2


# ---------------------------------------------------------------- items

def cola_dataset(folder: Path) -> tuple[Path, Path]:
    data = folder / "tiny.csv"
    data.write_text("id,Tweet,Target,Stance\n"
                    'a,"Remote school is great SCRIPTED_LABEL=favor",school,1\n'
                    'b,"Remote school is awful SCRIPTED_LABEL=against",school,0\n'
                    'c,"Schools open Monday SCRIPTED_LABEL=favor",school,2\n', encoding="utf-8")
    spec = folder / "tiny.yaml"
    spec.write_text("path: tiny.csv\ncolumns: {id: id, text: Tweet, target: Target, label: Stance}\n"
                    'labels: {"0": against, "1": favor, "2": neutral}\n', encoding="utf-8")
    scenario = folder / "cola.yaml"
    scenario.write_text("protocol: cola\nmodels: {default: scripted}\n", encoding="utf-8")
    return scenario, spec


class Contrarian(ScriptedChatCompletionClient):
    """A judger that always answers `against`."""

    def _reply(self, messages, output):
        return json.dumps({"stance": "against", "explanation": "contrarian"})


def test_cola_judger_resends_its_recorded_prompt_to_the_new_model(tmp_path, capsys):
    scenario, spec = cola_dataset(tmp_path)
    original = run([str(scenario), "--dataset", str(spec)], tmp_path / "cola")
    before = files_of(original)
    assert main(["score", str(original), "--role", "judger=scripted:AGREEMENT"]) == 0
    assert files_of(original) == before
    out = tmp_path / "cola-rescored-judger-scripted_AGREEMENT"
    printed = capsys.readouterr().out
    assert "before: macro_f1=" in printed and f"run: {out} units=3 rescored=3 kept=0 changed=0 backend_calls=3" in printed
    new = {r["id"]: r for r in rows(out)}
    assert {i: r["prediction"] for i, r in new.items()} == {"a": "favor", "b": "against", "c": "favor"}
    assert all(r["decided_by"] == "judger (rescored: judger=scripted:AGREEMENT)" for r in new.values())
    assert all(r["original_prediction"] == r["prediction"] for r in new.values())
    for item in "abc":
        copy, source = load(out / f"{item}.jsonl"), load(original / f"{item}.jsonl")
        added = copy.events[len(source.events):]
        assert [e.type for e in added] == ["call", "message", "outcome"]
        call = added[0]
        judger = [c for c in source.calls if c.role == "judger"][-1]
        assert call.messages == judger.messages and call.model == "scripted:AGREEMENT"  # the recorded prompt
        assert added[1].speaker == "judger (rescored)" and added[1].decision == new[item]["prediction"]
        assert copy.outcome.decided_by == new[item]["decided_by"] and copy.outcome.gold == source.outcome.gold
    # Another model that answers otherwise changes the predictions; nobody else is asked.
    client = Contrarian()
    copy = rescore_with(original / "b.jsonl", {"judger": "scripted:NEXT_TOPIC"}, client, tmp_path)
    assert len(client.requests) == 1
    assert load(copy).outcome.prediction == "against"
    copy = rescore_with(original / "a.jsonl", {"judger": "scripted:NEXT_TOPIC"}, Contrarian(), tmp_path / "x")
    assert load(copy).outcome.prediction == "against" and load(copy).outcome.explanation == "contrarian"


def test_s2mad_consensus_items_keep_their_result_unless_every(tmp_path, capsys):
    original = run(["s2mad", "--model", "scripted", "--input", "claim=Water is poisoned SCRIPTED_LABEL=fake",
                    "--input", "comment=no it is not", "--input", "comment=yes it is SCRIPTED_SCORE=0.5"],
                   tmp_path / "s2")
    assert load(transcript_in(original)).outcome.decided_by == "consensus"
    assert main(["score", str(original), "--role", "judge=scripted"]) == 0
    assert "kept its result (decided without judge; --every re-decides it)" in capsys.readouterr().out
    kept = tmp_path / "s2-rescored-judge-scripted"
    assert files_of(kept)[transcript_in(original).name] == transcript_in(original).read_bytes()
    assert "original_prediction" not in rows(kept)[0]
    every = tmp_path / "every"
    assert main(["score", str(original), "--role", "judge=scripted", "--every", "--out", str(every)]) == 0
    copy = load(transcript_in(every))
    judge = [m for m in copy.messages if m.role == "judge"]
    assert len(judge) == 1 and judge[0].speaker == "judge (rescored)"
    call = [c for c in copy.calls if c.role == "judge"][-1]
    last_p = [m for m in copy.messages if m.role == "debater_p"][-1].content
    # the debaters' last replies, as the judge would have seen them (further lines indented: moot.agents.prompts.inset)
    assert last_p.replace("\n", "\n    ") in call.messages[-1]["content"]
    assert copy.outcome.decided_by == "judge (rescored: judge=scripted)" and copy.outcome.prediction == "fake"


def test_s2mad_judged_item_resends_the_recorded_judge_prompt(tmp_path):
    original = run(["s2mad", "--model", "scripted", "--input", "claim=Claim B SCRIPTED_LABEL=real",
                    "--input", "comment=backs it SCRIPTED_SCORE=0.9 SCRIPTED_LABEL=fake",
                    "--input", "comment=doubts it SCRIPTED_SCORE=-0.4"], tmp_path / "s2")  # the debaters never agree: judged
    source = load(transcript_in(original))
    assert source.outcome.decided_by == "judge"
    client = Saying("Therefore the post is real.\nReal")
    copy = load(rescore_with(transcript_in(original), {"judge": "scripted:NEXT_TOPIC"}, client, tmp_path))
    assert len(client.requests) == 1
    assert [c for c in copy.calls if c.role == "judge"][-1].messages == [c for c in source.calls if c.role == "judge"][-1].messages
    assert copy.outcome.prediction == "real"


@pytest.mark.parametrize("scenario", ["s2mad_no_debate", "s2mad_vanilla"])
def test_s2mad_single_agent_resends_its_recorded_prompt(tmp_path, scenario):
    """Without debate (and the vanilla baseline) the one agent decides: it is what is rescored."""
    original = run([scenario, "--model", "scripted"], tmp_path / "s2")
    source = load(transcript_in(original))
    assert source.outcome.decided_by == "agent"
    client = Saying("Therefore, the post is real.")
    copy = load(rescore_with(transcript_in(original), {"agent": "scripted:NEXT_TOPIC"}, client, tmp_path))
    assert len(client.requests) == 1
    assert [c for c in copy.calls if c.role == "agent"][-1].messages == [c for c in source.calls if c.role == "agent"][-1].messages
    assert copy.outcome.prediction == "real" and copy.outcome.decided_by == "agent (rescored: agent=scripted:NEXT_TOPIC)"
    untouched = load(rescore_with(transcript_in(original), {"judge": "scripted:NEXT_TOPIC"}, Saying("Real"), tmp_path / "j"))
    assert untouched.outcome.prediction == source.outcome.prediction  # no judge spoke: the result stands


def test_negotiation_third_llm_votes_only_on_conflicts(tmp_path, capsys):
    agreed = run(["negotiation", "--model", "scripted", "--input", "text=great film SCRIPTED_LABEL=positive"],
                 tmp_path / "agreed")
    assert main(["score", str(agreed), "--role", "third=scripted"]) == 0
    assert "kept its result" in capsys.readouterr().out
    conflict = run(["negotiation", "--model", "scripted", "--input", "text=a film SCRIPTED_LABEL=GARBAGE"],
                   tmp_path / "conflict")  # unreadable decisions: a conflict
    source = load(transcript_in(conflict))
    assert source.outcome.decided_by == "conflict between the negotiations and no third LLM"
    assert main(["score", str(conflict), "--role", "third=scripted"]) == 0
    copy = load(transcript_in(tmp_path / "conflict-rescored-third-scripted"))
    added = copy.messages[len(source.messages):]
    assert {m.action for m in added} == {"third->first", "first->third", "third->second", "second->third"}
    assert not {m.action for m in added} & {"first->second", "second->first"}  # the first two are not re-run
    assert copy.outcome.decided_by == "six-way vote with the third LLM (rescored: third=scripted)"
    assert copy.outcome.raw.startswith("first->second: no consensus; second->first: no consensus; third->first:")


def test_every_protocol_with_a_deciding_role_can_rescore():
    deciding = {p.name for p in REGISTRY.all(from_yaml=False) if p.deciders}
    assert deciding == {"conference", "cola", "s2mad", "negotiation", "judge_eval"}  # debate: a vote, no role
    assert all(REGISTRY.get(name).rescore is not None for name in deciding)


def test_rescored_run_reports_beside_the_original(tmp_path, capsys):
    scenario, spec = cola_dataset(tmp_path)
    original = run([str(scenario), "--dataset", str(spec)], tmp_path / "cola")
    assert main(["score", str(original), "--role", "judger=scripted:AGREEMENT"]) == 0
    report = tmp_path / "report"
    assert main(["report", str(original), str(tmp_path / "cola-rescored-judger-scripted_AGREEMENT"),
                 "--out", str(report)]) == 0
    text = (report / "report.md").read_text()
    assert "| cola · scripted | R1 |" in text
    assert "judger=scripted:AGREEMENT" in text and "rescored from" in text


def test_model_means_what_it_means_in_run(finished, tmp_path, capsys):
    out = tmp_path / "every-role"
    assert main(["score", str(finished), "--model", "scripted", "--out", str(out)]) == 0  # every deciding role
    assert json.loads((out / "run.json").read_text())["rescored"]["roles"] == {
        "evaluator": "scripted", "grader": "scripted", "assessor": "scripted"}  # no reference outcome: nothing assessed
    out = tmp_path / "one-role"
    assert main(["score", str(finished), "--model", "grader=scripted", "--out", str(out)]) == 0
    assert json.loads((out / "run.json").read_text())["rescored"]["roles"] == {"grader": "scripted"}
    assert main(["score", str(finished)]) == 2
    assert "give --role ROLE=SPEC" in capsys.readouterr().err


def test_a_base_model_rescoring_an_s2mad_judge_continues_its_own_document(tmp_path, capsys):
    """A base model as the new judge gets its document (the post, both debaters' last turns and
    verdicts, its direction), not the recorded chat prompt; its verdict is read by likelihood."""
    original = run(["s2mad", "--model", "scripted:BASE", "--input", "claim=Water is poisoned",
                    "--input", "comment=no it is not", "--input", "comment=yes it is"], tmp_path / "s2")
    source = load(transcript_in(original))
    every = tmp_path / "every"
    assert main(["score", str(original), "--role", "judge=scripted:BASE", "--every", "--out", str(every)]) == 0
    copy = load(transcript_in(every))
    added = copy.calls[len(source.calls):]
    turn = next(c for c in added if c.kind == "continue")
    document = turn.messages[0]["content"]
    last_p = [m for m in source.messages if m.role == "debater_p" and not m.action.endswith("_answer")][-1]
    assert turn.messages[0]["source"] == "document" and f"\n\nAgent P: {last_p.content}\n\n" in document
    assert "Agent P's verdict: the post is fake." in document
    assert document.endswith(default_templates("s2mad")["document_judge"])
    assert copy.outcome.decided_by == "judge (scripted) (rescored: judge=scripted:BASE)"


# ---------------------------------------------------------------- priced (issue 31, part 2)

PRICE = ["--price", "1000", "2000"]  # dollars per million tokens: a judger call costs about $0.1


def rescoring_calls(folder: Path, spec: str) -> list[Call]:
    return [c for path in sorted(folder.glob("?.jsonl")) for c in load(path).calls if c.model == spec]


def test_rescoring_is_priced_stops_before_its_limit_and_continues_with_a_higher_one(tmp_path, capsys):
    from moot.models.budget import greatest_prompt
    from moot.models.price import Price
    from autogen_core.models import UserMessage

    scenario, spec = cola_dataset(tmp_path)
    original = run([str(scenario), "--dataset", str(spec), *PRICE], tmp_path / "cola")  # the original's spend
    assert json.loads((original / "run.json").read_text())["spend_usd"] > 0
    score = ["score", str(original), "--role", "judger=scripted:AGREEMENT", *PRICE, "--concurrency", "1"]
    price, new = Price(prompt=1000, completion=2000), "scripted:AGREEMENT"

    def spend(folder: Path) -> float:
        return json.loads((folder / "run.json").read_text()).get("spend_usd", 0.0)

    assert main([*score, "--out", str(tmp_path / "whole")]) == 0
    whole = rescoring_calls(tmp_path / "whole", new)
    assert len(whole) == 3 and all(c.cost_usd == pytest.approx(price.cost(c.usage.prompt_tokens, c.usage.completion_tokens))
                                   for c in whole)
    assert spend(tmp_path / "whole") == pytest.approx(sum(c.cost_usd for c in whole), abs=1e-6)  # its own, not the original's
    bound = max(price.cost(greatest_prompt([UserMessage(content=m["content"], source="user") for m in c.messages]), 256)
                for c in whole)  # the most a call can cost: what is held before it is sent (judger max_tokens 256)
    limit = round(bound + min(c.cost_usd for c in whole) / 2, 4)  # the first call fits, a second does not
    staged = tmp_path / "staged"
    capsys.readouterr()
    assert main([*score, "--max-cost", str(limit), "--out", str(staged)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"stopped early: the cost limit of ${limit:g} is reached"), err
    assert "a higher --max-cost to continue" in err[0]
    paid = [c for c in rescoring_calls(staged, new) if not c.cached]
    assert 0 < spend(staged) <= limit and spend(staged) == pytest.approx(sum(c.cost_usd for c in paid), abs=1e-6)
    assert 1 <= len(paid) < 3 and len(rows(staged)) == len(paid)  # a unit rescored per call paid; the rest not
    before = spend(staged)
    assert main([*score, "--max-cost", str(limit), "--out", str(staged)]) == 1  # the same limit: nothing more
    assert "backend_calls=0" in capsys.readouterr().out and spend(staged) == before
    assert main([*score, "--max-cost", "100", "--out", str(staged)]) == 0
    assert f"backend_calls={3 - len(paid)} cache_hits={len(paid)}" in capsys.readouterr().out  # none paid twice
    assert spend(staged) == pytest.approx(spend(tmp_path / "whole"), abs=1e-6)
    assert {r["id"]: r["prediction"] for r in rows(staged)} == {r["id"]: r["prediction"] for r in rows(tmp_path / "whole")}


def test_rescoring_a_transcript_file_is_priced_and_stopped_by_its_limit(tmp_path, capsys):
    scenario, spec = cola_dataset(tmp_path)
    original = run([str(scenario), "--dataset", str(spec)], tmp_path / "cola")
    score = ["score", str(original / "a.jsonl"), "--role", "judger=scripted:AGREEMENT", *PRICE]
    assert main([*score, "--out", str(tmp_path / "a.jsonl")]) == 0
    (call,) = [c for c in load(tmp_path / "a.jsonl").calls if c.model == "scripted:AGREEMENT"]
    assert call.cost_usd and call.cost_usd > 0
    capsys.readouterr()
    assert main([*score, "--max-cost", "0.01", "--out", str(tmp_path / "b.jsonl")]) == 1
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert err.startswith("stopped early: the cost limit of $0.01 is reached") and "another --out" in err
    assert not [c for c in load(tmp_path / "b.jsonl").calls if c.model == "scripted:AGREEMENT"]


def test_a_rescoring_cost_limit_needs_the_new_models_price(finished, tmp_path, capsys):
    out = tmp_path / "unpriced"
    assert main(["score", str(finished), "--role", "grader=openai:gpt-4o-mini", "--max-cost", "1",
                 "--out", str(out)]) == 2
    assert "--max-cost: no price for openai:gpt-4o-mini" in capsys.readouterr().err and not out.exists()


def test_an_experiments_score_counts_against_its_cost_limit_and_continues_with_a_higher_one(tmp_path, capsys):
    from moot.models.budget import greatest_prompt
    from moot.models.price import Price
    from autogen_core.models import UserMessage

    cola_dataset(tmp_path)
    text = ("experiment: priced\narms:\n  - {name: a, scenario: cola.yaml}\ndatasets: [tiny.yaml]\n"
            "prices: {prompt: 1000, completion: 2000}\n")
    scored = text + "score: {judger: 'scripted:AGREEMENT'}\n"
    (tmp_path / "exp.yaml").write_text(scored, encoding="utf-8")

    def run_exp(out: str, *extra: str) -> int:
        return main(["run", str(tmp_path / "exp.yaml"), "--out", str(tmp_path / out), "--quiet", *extra])

    def spend(folder: Path) -> float:
        return json.loads((folder / "run.json").read_text()).get("spend_usd", 0.0) if (folder / "run.json").exists() else 0.0

    assert run_exp("whole") == 0
    (cell,) = [m.parent for m in (tmp_path / "whole").rglob("run.json") if "-scored-" not in str(m.parent)]
    copy = cell.with_name(f"{cell.name}-scored-judger-scripted_AGREEMENT")
    calls = rescoring_calls(copy, "scripted:AGREEMENT")
    assert len(calls) == 3 and spend(copy) > 0 and spend(copy) == pytest.approx(sum(c.cost_usd for c in calls), abs=1e-6)
    price = Price(prompt=1000, completion=2000)
    bound = max(price.cost(greatest_prompt([UserMessage(content=m["content"], source="user") for m in c.messages]), 256)
                for c in calls)
    limit = round(spend(cell) + bound + min(c.cost_usd for c in calls) / 2, 4)  # the cell, then one re-scoring call
    (tmp_path / "exp.yaml").write_text(text, encoding="utf-8")
    assert run_exp("staged") == 0  # the cell alone, unscored
    (tmp_path / "exp.yaml").write_text(scored, encoding="utf-8")
    staged = tmp_path / "staged" / cell.relative_to(tmp_path / "whole")
    staged_copy = staged.with_name(copy.name)
    capsys.readouterr()
    assert run_exp("staged", "--max-cost", str(limit)) == 1
    assert capsys.readouterr().err.startswith(f"stopped before the cost limit of ${limit:g}")
    manifest = json.loads((tmp_path / "staged" / "experiment.json").read_text())
    assert [c["scored"] for c in manifest["cells"]] == ["failed"]
    paid = spend(staged_copy)
    assert paid > 0 and spend(staged) + paid <= limit
    assert run_exp("staged", "--max-cost", str(limit)) == 1  # the re-scoring's spend counts: no call fits now
    assert spend(staged_copy) == paid
    assert run_exp("staged", "--max-cost", "1000") == 0
    assert json.loads((tmp_path / "staged" / "experiment.json").read_text())["cells"][0]["scored"] == "completed"
    assert spend(staged_copy) == pytest.approx(spend(copy), abs=1e-6)
