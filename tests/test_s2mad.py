"""S2MAD on scripted models: stance separation, who sees what per round, consensus vs judge."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from autogen_core.models import CreateResult, RequestUsage
from run_support import run_item

from moot.cli import main
from moot.datasets import Comment
from moot.models.scripted import ScriptedChatCompletionClient
from moot.protocols import s2mad
from moot.protocols.s2mad_schema import S2madScenario
from moot.transcript import load
from moot.scenario import load_scenario
from moot.speaker_selection.conference import PolicyError, Turn
from moot.speaker_selection.s2mad import S2madPlan, next_speaker

ROOT = Path(__file__).resolve().parent.parent
SPECS = {"scorer": "scripted", "classifier": "scripted:AGREEMENT", "debater_p": "scripted:MORE_DEBATE",
         "debater_n": "scripted:NEXT_TOPIC", "judge": "scripted:GARBAGE"}
COMMENTS = ("strong yes [0.9]", "mild yes [0.2]", "nonsense [0.0]", "no way [-0.7]", "slight no [-0.1]",
            "sure [0.5]")


class Role(ScriptedChatCompletionClient):
    """Answers in turn from `answers`; the scorer reads `[score]` from the comment."""

    def __init__(self, name: str, answers=()):
        super().__init__()
        self.name, self.answers, self.seen = name, list(answers), []

    async def create(self, messages, *, tools=(), json_output=None, extra_create_args={},
                     cancellation_token=None) -> CreateResult:
        self.seen.append([str(m.content) for m in messages])
        last = str(messages[-1].content)
        if self.name == "scorer":
            score = re.search(r"Comment: .*\[(-?[\d.]+)\]", last).group(1)
            text = json.dumps({"Reason": "r", "Score": float(score)})
        elif self.name == "classifier":
            text = self.answers[0]
        else:
            text = f"{self.name}#{len(self.seen)} thinks so. Answer: {self.answers[len(self.seen) - 1]}"
        return CreateResult(content=text, usage=RequestUsage(prompt_tokens=1, completion_tokens=1),
                            finish_reason="stop", cached=False)


def run(tmp_path, p_answers, n_answers, judge=("Real",), subjective="No", **fields):
    clients = {"scorer": Role("scorer"), "classifier": Role("classifier", [subjective]),
               "debater_p": Role("P", p_answers), "debater_n": Role("N", n_answers), "judge": Role("J", judge)}
    scenario = S2madScenario(protocol="s2mad", models=SPECS, **fields)
    inputs = {"claim": "The bridge collapsed.", "comments": [Comment(t, i * 10.0) for i, t in enumerate(COMMENTS)]}
    result, transcript = run_item("s2mad", scenario, inputs, clients, tmp_path / "run", gold="fake")
    return result.outcome, clients, transcript.calls


def test_stance_separation_keeps_top_k_support_and_opposition(tmp_path):
    _, clients, _ = run(tmp_path, ["Fake", "Fake", "Fake"], ["Fake", "Fake", "Fake"], k=2)
    assert len(clients["scorer"].seen) == 6
    opening_p, opening_n = clients["debater_p"].seen[0][0], clients["debater_n"].seen[0][0]
    assert "Comment: strong yes [0.9]\nsure [0.5]\n" in opening_p and "mild yes" not in opening_p
    assert "Comment: no way [-0.7]\nslight no [-0.1]\n" in opening_n and "nonsense" not in opening_n
    assert "(3) Consider common sense" in opening_p  # classifier said No: objective prompt


def test_round_j_debater_sees_only_the_others_previous_reply(tmp_path):
    _, clients, calls = run(tmp_path, ["Real", "Fake", "Fake"], ["Fake", "Real", "Fake"])
    p, n = clients["debater_p"].seen, clients["debater_n"].seen
    assert len(p) == len(n) == 3  # initial opinion + 2 rounds
    for j in (1, 2):
        opening, own, ask = p[j]
        assert opening == p[0][0] and own.startswith(f"P#{j}") and f"Other debaters' opinions: N#{j}" in ask
        assert sum("N#" in part for part in p[j]) == 1
        assert f"Other debaters' opinions: P#{j}" in n[j][2] and sum("P#" in part for part in n[j]) == 1
    assert not clients["judge"].seen  # both ended on Fake: consensus
    assert [c.stage for c in calls][-4:] == ["debate"] * 4
    said = {}  # (stage, round) -> {debater: the label its reply was read as}
    for m in load(tmp_path / "run" / "item.jsonl").messages:
        if m.speaker in ("debater_p", "debater_n"):
            said.setdefault((m.action, m.round), {})[m.speaker] = m.decision
    assert said == {("initial_opinion", 0): {"debater_p": "real", "debater_n": "fake"},
                    ("debate", 1): {"debater_p": "fake", "debater_n": "real"},
                    ("debate", 2): {"debater_p": "fake", "debater_n": "fake"}}


def test_consensus_answers_without_the_judge(tmp_path):
    result, clients, _ = run(tmp_path, ["Real", "Real", "Fake"], ["Fake", "Fake", "Fake"])
    assert result.prediction == "fake" and "consensus" in result.explanation


def test_no_consensus_goes_to_the_judge_with_both_last_replies(tmp_path):
    result, clients, _ = run(tmp_path, ["Real", "Real", "Real"], ["Fake", "Fake", "Fake"], judge=["Real"])
    (judge_prompt,) = clients["judge"].seen
    assert "Agent_p arguing: P#3" in judge_prompt[0] and "Agent_n arguing: N#3" in judge_prompt[0]
    assert result.prediction == "real"


def test_subjective_claims_use_the_subjective_prompt_and_ablations_skip_calls(tmp_path):
    _, clients, _ = run(tmp_path, ["Fake"] * 3, ["Fake"] * 3, subjective="Yes")
    assert "reasonable subjective expression" in clients["debater_p"].seen[0][0]
    _, clients, _ = run(tmp_path, ["Fake"] * 3, ["Fake"] * 3, subjectivity="objective", stance_separation=False)
    assert not clients["classifier"].seen and not clients["scorer"].seen
    halves = [clients[d].seen[0][0].split("Comment: ")[1].split("\n\nAt the end")[0].split("\n")
              for d in ("debater_p", "debater_n")]
    assert len(halves[0]) == len(halves[1]) == 3 and set(halves[0] + halves[1]) == set(COMMENTS)


def test_without_debate_initial_opinions_decide(tmp_path):
    result, clients, _ = run(tmp_path, ["Real"], ["Fake"], rounds=0, judge=["Fake"])
    assert len(clients["debater_p"].seen) == 1 and len(clients["judge"].seen) == 1
    assert result.prediction == "fake"
    result, clients, _ = run(tmp_path, ["Real"], ["Real"], rounds=0)
    assert result.prediction == "real" and not clients["judge"].seen


def test_early_detection_uses_first_comments_or_those_before_t(tmp_path):
    _, clients, _ = run(tmp_path, ["Fake"] * 3, ["Fake"] * 3, early={"first_n": 2})
    assert len(clients["scorer"].seen) == 2
    _, clients, _ = run(tmp_path, ["Fake"] * 3, ["Fake"] * 3, early={"before_s": 25})
    assert len(clients["scorer"].seen) == 3


@pytest.mark.parametrize("text, score", [('{"Reason": "x", "Score": "0.7"}', 0.7), ('{"Score": -2}', -1.0),
                                         ("Score: -0.25", -0.25), ("no idea", None)])
def test_parse_score(text, score):
    assert s2mad.parse_score(text) == score


PLAN = S2madPlan("p", "n", "j", rounds=2)


@pytest.mark.parametrize("turns, expected", [
    ([], "p"), ([("p", "fake")], "n"), ([("p", "fake"), ("n", "real"), ("p", "real")], "n"),
    ([("p", "x"), ("n", "x"), ("p", "fake"), ("n", "fake")], None),
    ([("p", "x"), ("n", "x"), ("p", "fake"), ("n", "real")], "j"),
    ([("p", "x"), ("n", "x"), ("p", None), ("n", None)], "j"),
    ([("p", "x"), ("n", "x"), ("p", "fake"), ("n", "real"), ("j", "real")], None),
])
def test_s2mad_speaker_selection(turns, expected):
    assert next_speaker(PLAN, [Turn(s, d) for s, d in turns], ("real", "fake")) == expected


def test_s2mad_selection_without_rounds_and_bad_order():
    plan = S2madPlan("p", "n", "j", rounds=0)
    assert next_speaker(plan, [], ("real", "real")) is None
    assert next_speaker(plan, [], ("real", "fake")) == "j"
    with pytest.raises(PolicyError):
        next_speaker(PLAN, [Turn("n")], ("real", "fake"))


def test_shipped_s2mad_scenarios_load():
    for name in ("s2mad", "s2mad_no_stance", "s2mad_no_sub", "s2mad_no_nonsub", "s2mad_no_debate"):
        assert load_scenario(ROOT / "scenarios" / f"{name}.yaml").protocol == "s2mad"


def test_s2mad_dataset_run_and_resume(tmp_path, capsys):
    rows = [{"id": f"t{i}", "claim": f"Claim {i}", "label": lab,
             "comments": [{"text": f"comment {j}", "time": j} for j in range(3)]}
            for i, lab in enumerate(["true", "false", "unverified"])]
    (tmp_path / "r.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    spec = tmp_path / "r.yaml"
    spec.write_text("path: r.jsonl\nformat: jsonl\ncolumns: {id: id, text: claim, label: label, comments: comments}\n"
                    'labels: {"true": real, "false": fake}\n')
    scenario = tmp_path / "s.yaml"
    scenario.write_text("protocol: s2mad\nmodels: {default: scripted}\n")
    argv = [str(scenario), "--dataset", str(spec), "--out", str(tmp_path / "run")]
    assert main(argv) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(rf"run: {tmp_path / 'run'} items=2 backend_calls=\d+ cache_hits=\d+ unparsed=2", last)
    assert main(argv) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].endswith("items=2 backend_calls=0 cache_hits=0 unparsed=2")
    assert main([str(scenario), "--input", "claim=Sky is green", "--input", "comment=no", "--input", "comment=yes",
                 "--no-cache", "--out", str(tmp_path / "one.jsonl")]) == 0
    assert "veracity: unparsed" in capsys.readouterr().out


@pytest.mark.slow
def test_s2mad_one_claim_with_the_embedded_model(tmp_path, capsys):
    scenario = tmp_path / "s2.yaml"
    scenario.write_text("protocol: s2mad\nmodels: {default: local}\nk: 1\nrounds: 1\n"
                        "generation: {temperature: 0.2, max_tokens: 48, seed: 0}\n")
    out = tmp_path / "one"
    assert main([str(scenario), "--input", "claim=The bridge collapsed this morning.",
                 "--input", "comment=Confirmed by the police.", "--input", "comment=Fake, I just drove over it.",
                 "--out", str(out), "--no-cache"]) == 0
    assert "veracity: " in capsys.readouterr().out
    calls = load(next(out.glob("item-*.jsonl"))).calls
    assert {c.stage for c in calls} >= {"stance_separation", "subjectivity", "initial_opinion", "debate"}


def _marked_dataset(tmp_path) -> Path:
    """Items whose texts script the scripted model: every agent answers the item's
    SCRIPTED_LABEL; a comment's SCRIPTED_SCORE is its stance score, and a comment's own
    SCRIPTED_LABEL is what the debater who is given that comment answers."""
    rows = [{"id": "agree", "claim": "Claim A SCRIPTED_LABEL=fake", "label": "false",
             "comments": [{"text": "backs it SCRIPTED_SCORE=0.8", "time": 1},
                          {"text": "doubts it SCRIPTED_SCORE=-0.6", "time": 2}]},
            {"id": "split", "claim": "Claim B SCRIPTED_LABEL=real", "label": "true",
             "comments": [{"text": "backs it SCRIPTED_SCORE=0.9 SCRIPTED_LABEL=fake", "time": 1},
                          {"text": "nonsense SCRIPTED_SCORE=0.0", "time": 2},
                          {"text": "doubts it SCRIPTED_SCORE=-0.4", "time": 3}]}]
    (tmp_path / "r.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    spec = tmp_path / "r.yaml"
    spec.write_text("path: r.jsonl\nformat: jsonl\ncolumns: {id: id, text: claim, label: label, comments: comments}\n"
                    'labels: {"true": real, "false": fake}\n')
    return spec


# calls: scorer per comment + classifier + 2 openings + 2 per round, + judge for 'split'
@pytest.mark.parametrize("variant, calls", [("s2mad", (2 + 1 + 2 + 4) + (3 + 1 + 2 + 4 + 1)),
                                            ("s2mad_no_debate", (2 + 1 + 2) + (3 + 1 + 2 + 1))])
def test_scripted_model_gives_known_s2mad_predictions(tmp_path, capsys, variant, calls):
    """`--model scripted` drives S2MAD: 'agree' ends in consensus (fake), 'split' (debater_p is
    given the comment scripted fake, debater_n the claim's real) goes to the judge (real)."""
    out = tmp_path / "run"
    argv = [str(ROOT / "scenarios" / f"{variant}.yaml"), "--dataset", str(_marked_dataset(tmp_path)),
            "--model", "scripted", "--out", str(out)]
    assert main(argv) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.endswith(f"items=2 backend_calls={calls} cache_hits=0 unparsed=0")
    rows = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert {i: r["prediction"] for i, r in rows.items()} == {"agree": "fake", "split": "real"}
    assert rows["agree"]["explanation"].startswith("consensus") and rows["split"]["explanation"] == "judge's determination"
    p_opening = next(c for c in load(out / rows["split"]["transcript"]).calls
                     if c.role == "debater_p" and c.stage == "initial_opinion")
    assert "backs it" in p_opening.messages[0]["content"] and "doubts it" not in p_opening.messages[0]["content"]
