"""S2MAD on scripted models: stance separation, who sees what per round, consensus vs judge."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from autogen_core.models import CreateResult, RequestUsage
from run_support import run_item

from moot.cli import main
from moot.data.load import Comment
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.protocols.s2mad.stance import parse_score
from moot.protocols.s2mad.schema import S2madScenario
from moot.log.transcript import load
from moot.scenario.blocks import Generation
from moot.scenario.load import load_scenario
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


def run(tmp_path, p_answers, n_answers, judge=("Real",), subjective="No", agent=("Fake",), comments=None, **fields):
    clients = {"scorer": Role("scorer"), "classifier": Role("classifier", [subjective]),
               "debater_p": Role("P", p_answers), "debater_n": Role("N", n_answers), "judge": Role("J", judge),
               "agent": Role("A", agent)}
    scenario = S2madScenario(protocol="s2mad", models={**SPECS, "agent": "scripted:FAIL"}, **fields)
    given = comments if comments is not None else [Comment(t, i * 10.0) for i, t in enumerate(COMMENTS)]
    inputs = {"claim": "The bridge collapsed.", "comments": given}
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


def scored(clients) -> list[str]:
    """The comments the scorer was shown, in order."""
    return [re.search(r"Comment: (.*)", seen[0]).group(1) for seen in clients["scorer"].seen]


def test_early_detection_uses_first_comments_or_those_before_t(tmp_path):
    _, clients, _ = run(tmp_path, ["Fake"] * 3, ["Fake"] * 3, early={"first_n": 2})
    assert len(clients["scorer"].seen) == 2
    _, clients, _ = run(tmp_path, ["Fake"] * 3, ["Fake"] * 3, early={"before_s": 25})
    assert len(clients["scorer"].seen) == 3


def test_early_detection_takes_the_comments_posted_first_not_the_first_in_the_file(tmp_path):
    """Fig. 3's checkpoints count posts up to a point in time: order by `time` (untimed last)."""
    late_first = [Comment("late [0.9]", 300.0), Comment("untimed [0.5]"), Comment("early [-0.7]", 5.0),
                  Comment("middle [0.2]", 60.0)]
    _, clients, _ = run(tmp_path, ["Fake"] * 3, ["Fake"] * 3, comments=late_first, early={"first_n": 3})
    assert sorted(scored(clients)) == ["early [-0.7]", "late [0.9]", "middle [0.2]"]
    _, clients, _ = run(tmp_path, ["Fake"] * 3, ["Fake"] * 3, comments=late_first, early={"first_n": 4})
    assert "untimed [0.5]" in scored(clients)
    _, clients, _ = run(tmp_path, ["Fake"] * 3, ["Fake"] * 3, comments=late_first, early={"before_s": 100})
    assert sorted(scored(clients)) == ["early [-0.7]", "middle [0.2]"]
    _, clients, _ = run(tmp_path, ["Fake"] * 3, ["Fake"] * 3, comments=late_first, k=4)  # no checkpoint: all
    assert sorted(scored(clients)) == sorted(c.text for c in late_first)


def comments_shown(seen: list[str]) -> list[str]:
    """The comment lines of an initial-opinion (or vanilla) prompt."""
    return seen[0].split("Comment: ")[1].split("\n\nAt the end")[0].split("\n")


def test_without_stance_up_to_forty_random_comments_in_two_equal_parts(tmp_path):
    """w/o Stance (Table 2): no scoring; a random sample of at most forty, halved, never cut to k."""
    many = [Comment(f"c{i} [0.1]", float(i)) for i in range(50)]
    _, clients, _ = run(tmp_path, ["Fake"] * 3, ["Fake"] * 3, comments=many, stance_separation=False, k=2)
    assert not clients["scorer"].seen
    p, n = (comments_shown(clients[d].seen[0]) for d in ("debater_p", "debater_n"))
    assert len(p) == len(n) == 20 and len(set(p + n)) == 40 and set(p + n) <= {c.text for c in many}
    _, clients2, _ = run(tmp_path, ["Fake"] * 3, ["Fake"] * 3, comments=many, stance_separation=False, k=2)
    assert comments_shown(clients2["debater_p"].seen[0]) == p  # seeded by item: the same sample each run
    repeat = Generation(temperature=0.2, max_tokens=1024, seed=1)  # an experiment's next repeat
    _, clients3, _ = run(tmp_path, ["Fake"] * 3, ["Fake"] * 3, comments=many, stance_separation=False, k=2,
                         generation=repeat)
    assert comments_shown(clients3["debater_p"].seen[0]) != p  # another run seed: another sample
    odd = [Comment(f"o{i}", float(i)) for i in range(7)]
    _, clients, _ = run(tmp_path, ["Fake"] * 3, ["Fake"] * 3, comments=odd, stance_separation=False)
    assert [len(comments_shown(clients[d].seen[0])) for d in ("debater_p", "debater_n")] == [3, 4]


def test_without_debate_one_agent_reasons_over_both_stance_sets(tmp_path):
    """w/o Debate (Table 2): a single agent, the same comments (P then N) and prompt; its answer is final."""
    result, clients, calls = run(tmp_path, [], [], agent=["Real"], debate=False, k=2)
    assert not clients["debater_p"].seen and not clients["debater_n"].seen and not clients["judge"].seen
    (seen,) = clients["agent"].seen
    assert len(seen) == 1 and "(3) Consider common sense" in seen[0]  # the classifier said No: objective
    assert comments_shown(seen) == ["strong yes [0.9]", "sure [0.5]", "no way [-0.7]", "slight no [-0.1]"]
    assert result.prediction == "real" and result.decided_by == "agent"
    assert [c.role for c in calls] == ["scorer"] * 6 + ["classifier", "agent"]
    assert calls[-1].stage == "single_agent"


def test_vanilla_baseline_is_one_llm_given_the_claim_and_forty_random_comments(tmp_path):
    many = [Comment(f"c{i}", float(i)) for i in range(45)]
    result, clients, calls = run(tmp_path, [], [], agent=["Fake"], comments=many, baseline="vanilla",
                                 stance_separation=False, debate=False)
    assert [c.role for c in calls] == ["agent"] and calls[0].stage == "baseline"
    (seen,) = clients["agent"].seen
    assert seen[0].startswith("Instruction: Determine whether the claim is fake or real")
    assert "Claim: The bridge collapsed." in seen[0] and seen[0].endswith("options: Fake, Real.")
    shown = comments_shown(seen)
    assert len(shown) == len(set(shown)) == 40 and set(shown) <= {c.text for c in many}
    assert result.prediction == "fake" and result.decided_by == "agent"


def test_a_judge_reply_cut_off_at_max_tokens_says_so(tmp_path):
    class Cut(Role):
        async def create(self, *args, **kwargs):
            result = await super().create(*args, **kwargs)
            return result.model_copy(update={"finish_reason": "length", "content": "Both agents argue that"})

    clients = {"scorer": Role("scorer"), "classifier": Role("classifier", ["No"]), "debater_p": Role("P", ["Real"] * 3),
               "debater_n": Role("N", ["Fake"] * 3), "judge": Cut("J", ["Real"])}
    scenario = S2madScenario(protocol="s2mad", models=SPECS)
    result, _ = run_item("s2mad", scenario, {"claim": "c", "comments": [Comment("x [0.5]")]}, clients, tmp_path / "r")
    assert result.outcome.prediction == "unparsed"
    assert result.outcome.explanation == "judge's determination (the reply was cut off at max_tokens)"


@pytest.mark.parametrize("text, score", [('{"Reason": "x", "Score": "0.7"}', 0.7), ('{"Score": -2}', -1.0),
                                         ("Score: -0.25", -0.25), ("no idea", None)])
def test_parse_score(text, score):
    assert parse_score(text) == score


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
    assert load_scenario(ROOT / "scenarios" / "s2mad_no_debate.yaml").roles() == ["scorer", "classifier", "agent"]
    vanilla = load_scenario(ROOT / "scenarios" / "s2mad_vanilla.yaml")
    assert vanilla.baseline == "vanilla" and vanilla.random_comments == 40 and vanilla.roles() == ["agent"]
    checkpoints = sorted(load_scenario(p).early.first_n for p in (ROOT / "scenarios").glob("s2mad_early*.yaml"))
    assert checkpoints == [5, 10, 20, 40]


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
    assert main(argv) == 0  # the scripted model answers as s2mad declares: "Answer: <label>", read
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(rf"run: {tmp_path / 'run'} items=2 backend_calls=\d+ cache_hits=\d+ unparsed=0", last)
    assert main(argv) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].endswith("items=2 backend_calls=0 cache_hits=0 unparsed=0")
    assert main([str(scenario), "--input", "claim=Sky is green", "--input", "comment=no", "--input", "comment=yes",
                 "--no-cache", "--out", str(tmp_path / "one.jsonl")]) == 0
    assert re.search(r"veracity: (fake|real)\n", capsys.readouterr().out)


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
    transcript = load(next(out.glob("item-*.jsonl")))
    calls = transcript.calls
    assert {c.stage for c in calls} >= {"stance_separation", "subjectivity", "initial_opinion", "debate"}
    # The embedded default (a base model) continues the claim's document and reads every closed
    # answer by likelihood, calibrated: each reply's support, the classifier's yes/no, and after
    # each turn its verdict: never unparsed.
    assert all(c.messages[0]["source"] == "document" and len(c.messages) == 1 for c in calls)
    turns = [c for c in calls if c.kind == "continue"]
    assert [c.stage for c in turns][:2] == ["initial_opinion", "initial_opinion"]
    answers = [c for c in calls if c.kind == "choice" and c.stage != "calibration"]
    assert [c.stage for c in answers][:5] == ["stance_separation", "stance_separation", "subjectivity",
                                              "initial_opinion_answer", "initial_opinion_answer"]
    assert {c.stage for c in answers} >= {"debate_answer"}
    assert all(c.detail.method == "likelihood" and c.reply in c.detail.probabilities for c in answers)
    assert set(answers[0].detail.probabilities) == {"true", "false"}  # the reply says the post is ...
    assert set(answers[3].detail.probabilities) == {"fake", "real"}
    verdicts = [m for m in transcript.messages if m.action.endswith("_answer")]
    assert verdicts and all(m.measured.calibration == "contextual" and set(m.measured.content_free) ==
                            {"N/A", "[MASK]", "(empty)"} for m in verdicts)
    assert transcript.outcome.prediction in ("fake", "real")


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
                                            ("s2mad_early5", (2 + 1 + 2 + 4) + (3 + 1 + 2 + 4 + 1))])
def test_scripted_model_gives_known_s2mad_predictions(tmp_path, capsys, variant, calls):
    """`--model scripted` drives S2MAD: 'agree' ends in consensus (fake), 'split' (debater_p is
    given the comment scripted fake, debater_n the claim's real) goes to the judge (real)."""
    out = tmp_path / "run"
    argv = [str(ROOT / "scenarios" / f"{variant}.yaml"), "--dataset", str(_marked_dataset(tmp_path)),
            "--model", "scripted", "--out", str(out)]
    assert main(argv) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    # the scripted debaters say the same in every round, so round 2 asks round 1's prompts again: cached
    assert last.endswith(f"items=2 backend_calls={calls - 4} cache_hits=4 unparsed=0")
    rows = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert {i: r["prediction"] for i, r in rows.items()} == {"agree": "fake", "split": "real"}
    assert rows["agree"]["explanation"].startswith("consensus") and rows["split"]["explanation"] == "judge's determination"
    p_opening = next(c for c in load(out / rows["split"]["transcript"]).calls
                     if c.role == "debater_p" and c.stage == "initial_opinion")
    assert "backs it" in p_opening.messages[0]["content"] and "doubts it" not in p_opening.messages[0]["content"]


# calls: scorer per comment + classifier + the agent; the vanilla baseline: the agent only
@pytest.mark.parametrize("variant, calls, stage", [("s2mad_no_debate", (2 + 1 + 1) + (3 + 1 + 1), "single_agent"),
                                                   ("s2mad_vanilla", 1 + 1, "baseline")])
def test_scripted_model_runs_the_single_agent_variants(tmp_path, capsys, variant, calls, stage):
    """One agent decides: 'split' shows it the claim (real) and then a comment scripted fake, and
    the scripted model answers the last label it is shown."""
    out = tmp_path / "run"
    argv = [str(ROOT / "scenarios" / f"{variant}.yaml"), "--dataset", str(_marked_dataset(tmp_path)),
            "--model", "scripted", "--out", str(out)]
    assert main(argv) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].endswith(
        f"items=2 backend_calls={calls} cache_hits=0 unparsed=0")
    rows = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert {i: r["prediction"] for i, r in rows.items()} == {"agree": "fake", "split": "fake"}
    transcript = load(out / rows["split"]["transcript"])
    assert transcript.outcome.decided_by == "agent"
    (agent,) = [c for c in transcript.calls if c.role == "agent"]
    shown = agent.messages[0]["content"]
    assert agent.stage == stage and "Claim: Claim B" in shown and "backs it" in shown
    assert ("nonsense" in shown) == (variant == "s2mad_vanilla")  # score 0 leaves stance separation
