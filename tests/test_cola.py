"""COLA on scripted models: who sees what, label mapping, ablations, scenario checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from protocol_fakes import TaggingClient, reply_of
from run_support import run_item, run_scenario

from moot.log.events import Call, Outcome
from moot.protocols.cola.item import labels_of
from moot.protocols.cola.schema import ColaScenario
from moot.engine.folder import read_results
from moot.saved.files import transcript_of
from moot.saved.records import ResultRow
from moot.scenario.load import ScenarioError, load_scenario
from moot.speaker_selection.cola import DebatePlan, next_speaker
from moot.speaker_selection.conference import PolicyError
from moot.log.transcript import load

ROOT = Path(__file__).resolve().parent.parent
TEXT, TARGET = "Online school is a drag, bring back teachers.", "online classes"


class Result:
    """What a COLA test reads of one item: its status, prediction, explanation, raw judger reply."""

    def __init__(self, unit_result):
        outcome = unit_result.outcome
        self.status, self.prediction = unit_result.status, outcome.prediction
        self.explanation, self.raw = outcome.explanation, outcome.raw


def run(tmp_path: Path, client: TaggingClient, role=None, **fields):
    scenario = ColaScenario(protocol="cola", models={"default": "scripted"}, **fields)
    inputs = {"text": TEXT, "target": TARGET, **({"role": role} if role else {})}
    result, transcript = run_item("cola", scenario, inputs, {"scripted": client}, tmp_path / "run", gold="against")
    return Result(result), transcript.events


# The analyst prompts as the paper prints them (Methods), with {tweet}/{target}/{role} filled in.
PRINTED = {
    "linguist": "You are a linguist. Accurately and concisely explain the linguistic elements in the sentence and "
                "how these elements affect meaning, including grammatical structure, tense and inflection, virtual "
                "speech, rhetorical devices, lexical choices and so on. Do nothing else. {tweet}",
    "domain": "You are a {role}. Accurately and concisely explain the key elements contained in the quote, such as "
              "characters, events, parties, religions, etc. Also explain their relationship with {target} (if "
              "exist). Do nothing else. {tweet}",
    "social": "You are a heavy social media user and are very familiar with the way of expression on the Internet. "
              "Analyze the following sentence, focusing on the content, emotional tone, implied meaning, and so on. "
              "Do nothing else. {tweet}",
}
SYSTEM = {"linguist": "You are a linguist.", "domain": "You are a {role}.",
          "social": "You are a heavy social media user and are very familiar with the way of expression on the Internet."}


def sent(client: TaggingClient, tag: str) -> list[tuple[str, str]]:
    """(type, content) of each message the call tagged `tag` sent."""
    (request,) = [r for r, (t, _) in zip(client.requests, client.prompts) if t == tag]
    return [(type(m).__name__, str(m.content)) for m in request["messages"]]


def test_analysts_see_only_the_text_and_not_each_other(tmp_path):
    client = TaggingClient()
    run(tmp_path, client)
    for tag in ("LING", "DOMAIN", "SOCIAL"):
        (prompt,) = client.by_tag(tag)
        assert TEXT in prompt and "REPLY" not in prompt
    (domain,) = client.by_tag("DOMAIN")
    assert domain.startswith("You are a domain specialist in the field of online classes.")
    assert f"relationship with {TARGET}" in domain


@pytest.mark.parametrize("expert, tag", [("linguist", "LING"), ("domain", "DOMAIN"), ("social", "SOCIAL")])
def test_each_analyst_is_told_its_role_in_the_system_message(tmp_path, expert, tag):
    """System (the role sentence) + user (the rest) is the paper's printed prompt word for word."""
    client = TaggingClient()
    run(tmp_path, client, role="theologian")
    fill = {"tweet": TEXT, "target": TARGET, "role": "theologian"}
    (system, user) = sent(client, tag)
    assert system == ("SystemMessage", SYSTEM[expert].format(**fill))
    assert user[0] == "UserMessage" and TEXT in user[1] and not user[1].startswith("You are")
    assert f"{system[1]} {user[1]}" == PRINTED[expert].format(**fill)


def test_debaters_see_text_and_three_analyses_but_not_each_other(tmp_path):
    client = TaggingClient()
    run(tmp_path, client)
    analyses = [reply_of(client, t) for t in ("LING", "DOMAIN", "SOCIAL")]
    for stance, phrase in (("favor", "in favor of"), ("against", "against"), ("neutral", "neutral towards")):
        (prompt,) = client.by_tag(f"ARG-{stance}")
        assert prompt.startswith(f"Tweet: {TEXT}. Linguistic analysis: {analyses[0]}.")
        assert f"The analysis of domain specialist in the field of {TARGET}: {analyses[1]}." in prompt
        assert f"The analysis of a heavy social media user: {analyses[2]}." in prompt
        assert f"is {phrase} {TARGET}." in prompt
        assert "ARG-" not in prompt
        assert [kind for kind, _ in sent(client, f"ARG-{stance}")] == ["UserMessage"]  # no system message


def test_judger_sees_text_and_every_argument_and_answers_one_option(tmp_path):
    client = TaggingClient(judge_reply="A")
    result, events = run(tmp_path, client)
    (prompt,) = client.by_tag("JUDGE")
    assert f"Sentence: {TEXT}." in prompt
    for stance, name in (("favor", "in favor"), ("against", "against"), ("neutral", "neutral")):
        assert f"Arguments that the attitude is {name}: {reply_of(client, 'ARG-' + stance)}." in prompt
    assert prompt.endswith("Choose from: A: Against B: Favor C: Neutral\n\n"
                           "Constraint: Answer with only the option above that is most accurate and nothing else.")
    assert "LING-REPLY" not in prompt and "JSON" not in prompt  # analyses reach it only through the arguments
    assert client.requests[-1]["output"] is None  # the main-results judger answers in text
    assert result.prediction == "against" and result.raw == "A"
    calls = [e for e in events if isinstance(e, Call)]
    assert [c.role for c in calls][3:] == ["debater_favor", "debater_against", "debater_neutral", "judger"]
    assert sorted(c.role for c in calls[:3]) == ["domain", "linguist", "social"]
    assert calls[-1].messages == [{"type": "UserMessage", "content": prompt, "source": "user"}]
    assert not any(c.cached for c in calls)


def test_explainability_variant_asks_for_json_without_the_option_constraint(tmp_path):
    client = TaggingClient()
    result, _ = run(tmp_path, client, judger={"output": "json"})
    (prompt,) = client.by_tag("JUDGE")
    assert "Answer with only the option" not in prompt and "Choose from" not in prompt
    assert prompt.endswith('Answer in JSON with two keys: "stance" (one of: favor, against, neutral) and '
                           '"explanation" (a concise explanation of no more than 100 tokens).')
    assert client.requests[-1]["output"] is not None  # structured output
    assert result.prediction == "against" and result.explanation == "because"


def test_unmappable_judger_reply_is_unparsed_with_raw_text(tmp_path):
    result, events = run(tmp_path, TaggingClient(judge_reply="Hard to say, could be either."))
    assert result.prediction == "unparsed"
    finished = events[-2]
    assert isinstance(finished, Outcome) and finished.raw == "Hard to say, could be either."
    assert finished.prediction == "unparsed" and events[-1].status == "completed"


def test_option_variant_maps_the_letter(tmp_path):
    result, _ = run(tmp_path, TaggingClient(judge_reply="B"), judger={"output": "option"})
    assert result.prediction == "favor"


def test_json_judger_explanation_with_a_raw_newline_is_kept(tmp_path):
    reply = '{ "stance": "favor", "explanation": "No more \u2026 tokens.\nYou can use \u2026"}'
    result, _ = run(tmp_path, TaggingClient(judge_reply=reply))
    assert result.prediction == "favor" and result.explanation == "No more \u2026 tokens.\nYou can use \u2026"


def test_cola_judger_options_are_letters():  # the mapping itself: tests/test_labels.py
    s = ColaScenario(protocol="cola")
    assert labels_of(s).letters and labels_of(s).map("B: Favor")[0] == "favor"


def test_ablation_without_debate_judges_from_the_analyses(tmp_path):
    client = TaggingClient()
    result, events = run(tmp_path, client, debate=False)
    assert not client.by_tag("ARG")
    (prompt,) = client.by_tag("JUDGE")
    assert "following analyses: Linguistic analysis: LING-REPLY" in prompt
    assert [e.role for e in events if isinstance(e, Call)][-1] == "judger"


def test_ablation_without_analysis_stage_and_without_one_expert(tmp_path):
    client = TaggingClient()
    run(tmp_path, client, experts=[])
    assert len(client.prompts) == 4 and "analysis" not in client.by_tag("ARG-favor")[0].lower()
    client = TaggingClient()
    run(tmp_path, client, experts=["domain", "social"])
    assert not client.by_tag("LING") and "Linguistic analysis" not in client.by_tag("ARG-favor")[0]


def test_domain_role_per_target_and_override(tmp_path):
    client = TaggingClient()
    run(tmp_path, client, domain_role={"targets": {"Online Classes": "education researcher"}})
    assert client.by_tag("DOMAIN")[0].startswith("You are a education researcher.")
    client = TaggingClient()
    run(tmp_path, client, role="chemist")  # an item may name its own specialist (--input role=...)
    assert client.by_tag("DOMAIN")[0].startswith("You are a chemist.")


@pytest.mark.parametrize("target, role", [
    ("Atheism", "theologian"), ("Climate Change is a Real Concern", "environmental scientist"),
    ("feminist movement", "sociologist"), ("Legalization of Abortion", "sociologist"),
    ("Hillary Clinton", "political scientist"), ("Donald Trump", "political scientist"),
    ("online classes", "domain specialist in the field of online classes"),  # moot's fallback
])
def test_semeval_targets_get_the_authors_domain_specialists(tmp_path, target, role):
    client = TaggingClient()
    scenario = ColaScenario(protocol="cola", models={"default": "scripted"})
    run_item("cola", scenario, {"text": TEXT, "target": target}, {"scripted": client}, tmp_path / "run")
    assert sent(client, "DOMAIN")[0] == ("SystemMessage", f"You are a {role}.")
    assert f"The analysis of {role}: DOMAIN-REPLY" in client.by_tag("ARG-favor")[0]


def test_a_dataset_names_each_item_s_specialist(tmp_path):
    """A role column beats the dataset's target_roles, which beat the scenario's map."""
    (tmp_path / "d.csv").write_text("text,target,role\nt1,Atheism,\nt2,Atheism,priest\nt3,Unlisted,\n")
    spec = tmp_path / "d.yaml"
    spec.write_text("path: d.csv\ncolumns: {text: text, target: target, role: role}\n"
                    "target_roles: {unlisted: historian}\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text("protocol: cola\nmodels: {default: scripted}\n")
    out = tmp_path / "run"
    assert run_scenario(scenario, out, extra=["--dataset", str(spec)]) == 0
    systems = {}
    for unit, row in read_results(out).items():
        (call,) = [c for c in load(transcript_of(out, ResultRow.model_validate(row))).calls if c.role == "domain"]
        systems[unit] = call.messages[0]["content"]
    assert systems == {"0": "You are a theologian.", "1": "You are a priest.", "2": "You are a historian."}


@pytest.mark.parametrize("baseline", ["direct", "cot"])
def test_a_baseline_is_the_judger_alone_shown_only_the_text(tmp_path, baseline):
    client = TaggingClient(judge_reply="Step by step: it mocks online school.\nAnswer: A")
    result, events = run(tmp_path, client, baseline=baseline, experts=[], debate=False)
    [(tag, prompt)] = client.prompts
    assert tag == "JUDGE" and sent(client, "JUDGE") == [("UserMessage", prompt)]
    assert prompt.startswith(f"Determine whether the sentence is in favor of or against {TARGET}, or is neutral. "
                             f"Sentence: {TEXT}. Choose from: A: Against B: Favor C: Neutral")
    assert "rguments" not in prompt and "analys" not in prompt
    assert ("Let's think step by step" in prompt) == (baseline == "cot")
    assert result.prediction == "against"
    (call,) = [e for e in events if isinstance(e, Call)]
    assert (call.role, call.stage) == ("judger", "baseline")


@pytest.mark.parametrize("spoken, expected", [
    ([], "d_favor"), (["d_favor"], "d_against"), (["d_favor", "d_against"], "judger"),
    (["d_favor", "d_against", "judger"], None),
])
def test_debate_speaker_selection(spoken, expected):
    assert next_speaker(DebatePlan(("d_favor", "d_against"), "judger"), spoken) == expected


def test_debate_selection_rounds_no_debate_and_bad_order():
    assert DebatePlan(("a", "b"), "j", rounds=2).order() == ("a", "b", "a", "b", "j")
    assert next_speaker(DebatePlan((), "j"), []) == "j"
    with pytest.raises(PolicyError):
        next_speaker(DebatePlan(("a", "b"), "j"), ["b"])


def test_shipped_cola_scenarios_load():
    names = sorted(p.name for p in (ROOT / "scenarios").glob("cola*.yaml"))
    assert {"cola.yaml", "cola_no_linguist.yaml", "cola_no_domain_specialist.yaml",
            "cola_no_social_veteran.yaml", "cola_no_analysis.yaml", "cola_no_debate.yaml",
            "cola_explain.yaml", "cola_direct.yaml", "cola_cot.yaml"} <= set(names)
    shipped = {name: load_scenario(ROOT / "scenarios" / name) for name in names}
    for name, s in shipped.items():  # the main-results judger everywhere but the explainability variant
        assert s.protocol == "cola" and s.judger.output == ("json" if name == "cola_explain.yaml" else "option")
        assert s.domain_role.for_target("Atheism") == "theologian"
    assert shipped["cola_direct.yaml"].baseline == "direct" and shipped["cola_cot.yaml"].baseline == "cot"
    assert shipped["cola_direct.yaml"].roles() == ["judger"]
    assert load_scenario(ROOT / "scenarios" / "cola_no_debate.yaml").debate is False
    assert load_scenario(ROOT / "scenarios" / "cola_no_analysis.yaml").experts == []


@pytest.mark.parametrize("extra, message", [
    ("colour: red\n", "colour: unknown key (allowed: protocol, title"),
    ("options: [favor, against]\n", "options: must list the same labels"),
    ("models: {judge: scripted}\n", "models.judge: unknown role"),
    ("prompts: {judger: 'Say $nonsense'}\n", "unknown placeholder $nonsense"),
    ("experts: [linguist, linguist]\n", "experts must be distinct"),
    ("baseline: direct\n", "baseline: a baseline is the judger alone: set experts: [] and debate: false"),
])
def test_bad_cola_scenarios_name_line_and_key(tmp_path, extra, message):
    path = tmp_path / "bad.yaml"
    path.write_text("protocol: cola\ntitle: t\n" + extra, encoding="utf-8")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert message in str(err.value) and f"{path}:3:" in str(err.value)


def test_scripted_model_answers_the_option_letter_of_its_label():
    from moot.models.backends.scripted.client import option_letter

    prompt = ("Determine whether ... Choose from: A: Against B: Favor C: Neutral\n\n"
              "Constraint: Answer with only the option above that is most accurate and nothing else.")
    assert option_letter(prompt, "favor") == "B" and option_letter(prompt, "neutral") == "C"
    assert option_letter(prompt, None) == "A"  # no script: the first option
    assert option_letter("Choose from: A: Against B: Favor", "favor") is None  # not asked for the option alone
