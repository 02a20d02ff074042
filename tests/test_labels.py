"""The one label-mapping rule of every per-item protocol (moot.protocols.items.labels): a reply maps
onto a label only when it is unambiguous; a reply that repeats the prompt's option list is
unparsed, never the option named last. Replies of the QA pass are in data/qa_label_replies.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moot.protocols.cola import item as cola
from moot.protocols.negotiation import negotiator as negotiation
from moot.protocols.s2mad import turns as s2mad
from moot.protocols.cola.schema import ColaScenario
from moot.protocols.items.labels import LabelSet
from moot.protocols.negotiation.schema import NegotiationScenario
from moot.protocols.s2mad.schema import S2madScenario
from moot.models.replies import json_object, loads

QA = json.loads((Path(__file__).parent / "data" / "qa_label_replies.json").read_text())
COLA = cola.labels_of(ColaScenario(protocol="cola"))  # options A: Against B: Favor C: Neutral
S2MAD = s2mad.labels_of(S2madScenario(protocol="s2mad"))  # Fake, Real (+ true/false aliases)
NEG = negotiation.labels_of(NegotiationScenario(protocol="negotiation", models={"first": "scripted", "second": "scripted:AGREEMENT"}))


@pytest.mark.parametrize("reply, label", [
    # structured answers
    ('{"stance": "against", "explanation": "x"}', "against"),
    ('```json\n{"stance": "Favor"}\n```', "favor"),
    ('{"stance": "maybe"}', "unparsed"),
    ('{"stance": "favor or against"}', "unparsed"),
    ('{ "stance": "favor", "explanation": "cut off by max_to', "favor"),
    ('{"explanation": "favor"}', "unparsed"),  # JSON without a label key: no guess from prose
    # the whole reply is one option (the paper's "Answer with only the option above")
    ("A", "against"), ("B: Favor", "favor"), ("(C)", "neutral"), ("Neutral.", "neutral"),
    ("**Favor**", "favor"), ("none", "neutral"), ("B: Against", "unparsed"), ("D", "unparsed"),
    # decisive markers
    ("The answer is against.", "against"), ("Stance: favor", "favor"), ("Answer: B", "favor"),
    ("Reasoning first.\nFinal answer: **Neutral**", "neutral"),
    ("Stance: favor\n...\nStance: against", "unparsed"),  # two decisive markers disagree
    ("Stance: not favor", "unparsed"), ("Answer: favor or against", "unparsed"),
    # several labels, no decisive marker
    ("favor or against", "unparsed"), ("I lean favor but against is possible", "unparsed"),
    ("The tweet is clearly against it.", "unparsed"), ("", "unparsed"),
    # a concluding last sentence (rule 4), e.g. the chain-of-thought baseline's
    ("Step by step, the tweet mocks the target. Therefore, the stance is against.", "against"),
    ("Therefore, the stance is neither favor nor against.", "unparsed"),
    ("Choose from: A: Against B: Favor C: Neutral", "unparsed"),
])
def test_cola_replies(reply, label):
    assert COLA.map(reply)[0] == label


@pytest.mark.parametrize("reply, label", [
    ("Real", "real"), ("fake.", "fake"), ("The comments doubt it.\n\nAnswer: Fake", "fake"),
    ("Evidence is thin. Therefore the answer is real.", "real"),
    ("Both sides argued.\nReal", "real"),  # the paper's format: the choice at the end
    ("Answer: false", "fake"),  # alias of the dataset's labels
    ("At the end, please choose the answer from the following options: Fake, Real.", "unparsed"),
    ("Answer: Fake\nAnswer: Real", "unparsed"),
    ("A fake-looking post, but real sources.", "unparsed"),
    ("A", "unparsed"),  # S2MAD prints no option letters: "A" is not an option
    (QA["s2mad_initial_opinion"], "unparsed"),   # repeats "...options: Fake, Real."
    (QA["s2mad_debate_round2"], "unparsed"),
    (QA["s2mad_debate_round1_option_fake"], "unparsed"),  # echo "choose the correct option: Fake" mid-text
    (QA["s2mad_real_or_fake"], "unparsed"),
])
def test_s2mad_replies(reply, label):
    assert S2MAD.decide(reply) == label


@pytest.mark.parametrize("reply, label", [
    # the natural conclusions the paper's prompts elicit ("At the end, please choose...")
    ("The comments doubt it.\n\nTherefore, the post is fake.", "fake"),
    ("Based on the analysis, I choose: Fake.", "fake"),
    ("Both agents agree on the sources. In conclusion, the post is real.", "real"),
    ("The evidence is thin.\n**Conclusion:** The claim is false.", "fake"),  # alias of the labels
    ("So the post is real", "real"), ("I choose Real.", "real"),
    ("Therefore, the post is fake.\nAnswer: Fake", "fake"),  # agrees with the decisive marker
])
def test_s2mad_conclusions_parse(reply, label):
    assert S2MAD.decide(reply) == label


@pytest.mark.parametrize("reply", [
    "Therefore, the post is not fake.",                       # negated
    "Therefore, I cannot determine whether it is fake.",
    "Therefore, the post is fake rather than real.",          # both labels
    "In conclusion, it could be fake or real.",
    "Therefore, is the post fake?",                           # a question
    "Therefore, the post is fake. I hope this helps.",        # the conclusion is not the last sentence
    "Thus the post is real.\nAnswer: Fake\nAnswer: Real",     # decisive markers disagree
    "Some say the post is fake.",                             # no concluding word ("So" is a word)
    "The post is fake.",                                      # a claim, not a conclusion
    "At the end, please choose the answer from the following options: Fake, Real.",
])
def test_s2mad_ambiguous_conclusions_stay_unparsed(reply):
    assert S2MAD.decide(reply) == "unparsed"


@pytest.mark.parametrize("reply, label", [
    ("The film is praised. Decision: positive", "positive"),
    ("Reasoning: dull and prosaic.\nDecision: Negative.", "negative"),
    ("negative", "negative"),
    ('Reason step by step, then end with "Decision: " and one of: positive, negative.', "unparsed"),
    (QA["negotiation_generator"], "unparsed"),  # the QA's repeated instruction (was "negative")
    ("Decision: positive\n\nInput: another film\nReasoning: bad\nDecision: negative", "unparsed"),
    ("Decision: not positive", "unparsed"),
])
def test_negotiation_generator_replies(reply, label):
    assert NEG.decide(reply) == label


def test_map_keeps_the_explanation_of_json_with_a_raw_newline():
    """COLA's QA reply: a raw newline inside "explanation" is still JSON text (strict=False)."""
    reply = QA["cola_judger_raw_newline"]
    assert "\n" in reply
    label, explanation = COLA.map(reply)
    assert label == "favor"
    assert explanation.startswith("No more than one sentence") and "\nYou can use this technology" in explanation
    shape = '{ "stance": "favor", "explanation": "No more \u2026 tokens.\nYou can use \u2026"}'
    assert COLA.map(shape) == ("favor", "No more \u2026 tokens.\nYou can use \u2026")


def test_shared_json_helper():
    assert json_object('{"a": "x\ny"}') == {"a": "x\ny"}
    assert json_object('noise ```json\n{"a": 1}\n``` noise') == {"a": 1}
    assert json_object('```json\n{"a": 1}\n```') == {"a": 1}
    assert json_object("no json") is None and json_object("[1, 2]") is None
    assert loads('"tab\there"') == "tab\there"


def test_letters_only_where_the_prompt_printed_them():
    plain = LabelSet(("favor", "against"), ("favor", "against"))
    assert plain.map("A")[0] == "unparsed" and plain.map("favor")[0] == "favor"
    lettered = LabelSet(("favor", "against"), ("favor", "against"), letters=True)
    assert lettered.map("a")[0] == "favor" and lettered.map("a against post")[0] == "unparsed"
