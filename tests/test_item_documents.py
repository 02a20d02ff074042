"""The item protocols on a base model (`scripted:BASE`): what each role is sent (one document it
continues, labelled turns, its opening words, stops at anyone's label, no copying of the
document), every closed answer read by likelihood after a last line (0 unparsed), and contextual
calibration checked against a hand computation, re-computed from the saved transcript alone."""

from __future__ import annotations

import math

import pytest
from run_support import run_item

from moot.log.events import Message
from moot.models.calibration import calibrate, content_free_prior, recalibrated
from moot.models.requests import Choose, Continue, MeasuredResult, choice_detail
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.protocols.cola.schema import ColaScenario
from moot.protocols.debate.schema import DebateScenario
from moot.protocols.negotiation.schema import NegotiationScenario
from moot.protocols.s2mad.schema import S2madScenario

BASE = "scripted:BASE"
POST, TARGET = "Online school is a drag, bring back teachers.", "online classes"


def base_client() -> ScriptedChatCompletionClient:
    return ScriptedChatCompletionClient(["BASE"])


def sent(client) -> list[tuple[str, object]]:
    """(the document, the request) of every call, in order."""
    found = []
    for r in client.requests:
        (message,) = r["messages"]  # one message: the document, never a chat
        assert message.source == "document"
        found.append((str(message.content), r["request"]))
    return found


def turns(client) -> list[tuple[str, Continue]]:
    return [(d, r) for d, r in sent(client) if isinstance(r, Continue)]


def choices(client) -> list[tuple[str, Choose]]:
    return [(d, r) for d, r in sent(client) if isinstance(r, Choose)]


def answers(transcript) -> list[Message]:
    """The messages that carry a closed answer read from probabilities."""
    return [m for m in transcript.messages if m.measured is not None]


# ---------------------------------------------------------------- COLA

def test_cola_roles_continue_the_items_document(tmp_path):
    client = base_client()
    scenario = ColaScenario(protocol="cola", models={"default": BASE})
    result, transcript = run_item("cola", scenario, {"text": POST, "target": TARGET}, {BASE: client}, tmp_path / "r")
    header = f'Stance analysis of a social media post about {TARGET}.\n\nPost: "{POST}"'
    written = turns(client)
    assert [r.prefix for _, r in written] == [
        "Linguist: The post", "Domain specialist in the field of online classes: The post",
        "Social media user: The post", "Debater in favor: The author", "Debater against: The author",
        "Debater neutral: The author"]
    for document, request in written:
        assert document.startswith(header + "\n\n") and "You are" not in document and "Do nothing else" not in document
        assert request.document and request.reference == document and request.no_repeat_ngram == 7
        assert request.min_tokens == 20 and {"\n\n", "[", "Judge:", "\nLinguist", "Debater against:"} <= set(request.stop)
        assert {"Linguist", "Judge", "(", '"'} <= set(request.ban_first)
    analysts = [d for d, r in written[:3]]
    assert analysts[0] == header + "\n\n[A linguist explains the grammar, tense, rhetorical devices and word choice " \
                                   "of the post, and how they shape its meaning.]"
    assert all("REPLY" not in d and "(scripted)" not in d for d in analysts)  # never each other's analysis
    said = {m.role: m.content for m in transcript.messages}
    assert said["linguist"].startswith("The post (scripted) I have a point on")  # the opening, then the turn
    debater = written[3][0]
    assert f"\n\nLinguist: {said['linguist']}\n\n" in debater and f"\n\nSocial media user: {said['social']}\n\n" in debater
    assert debater.endswith(f"[A debater argues that the author of the post is in favor of {TARGET}, citing the "
                            "strongest evidence from the analyses.]")
    assert "Debater against" not in debater  # debaters do not see each other
    (judged, asked), = choices(client)
    assert asked.document and asked.prefix == "Judge: The author of the post feels"
    assert asked.options == ("positive", "negative", "neutral") and asked.sep == " "
    # The judger's own document: the arguments (as in the paper, not the analyses), its direction,
    # and the post last.
    assert judged == "\n\n".join([
        f"Stance analysis of a social media post about {TARGET}.",
        *(f"Debater {name}: {said['debater_' + lab]}" for name, lab in
          (("in favor", "favor"), ("against", "against"), ("neutral", "neutral"))),
        f"[A judge weighs what was said against the post and decides its attitude towards {TARGET}.]",
        f'Post: "{POST}"'])
    outcome = transcript.outcome
    assert (outcome.prediction, outcome.decided_by) == ("favor", "judger (scripted)")  # "positive", p = 0.7
    (answer,) = answers(transcript)
    assert answer.role == "judger" and answer.measured.probabilities == {"positive": 0.7, "negative": 0.15,
                                                                         "neutral": 0.15}
    assert answer.measured.calibration == "" and answer.decision == "favor"  # a scripted model: auto is none


class Primed(ScriptedChatCompletionClient):
    """A base model with a prior: its choice probabilities are set by what the document's post
    is (the real post, or a content-free input), so the calibration can be computed by hand."""

    GIVEN = {POST: (0.5, 0.3, 0.2), "N/A": (0.6, 0.2, 0.2), "[MASK]": (0.5, 0.3, 0.2), "": (0.7, 0.1, 0.2)}

    def __init__(self):
        super().__init__(["BASE"])

    def _answer(self, messages, request, extra):
        if not isinstance(request, Choose):
            return super()._answer(messages, request, extra)
        post = str(messages[0].content).split('Post: "', 1)[1].split('"', 1)[0]
        text, detail = choice_detail("scripted", dict(zip(request.options, map(math.log, self.GIVEN[post]))))
        return MeasuredResult(content=text, usage=self.actual_usage(), finish_reason="stop", cached=False,
                              detail=detail)


@pytest.mark.parametrize("calibration, expected", [("contextual", "against"), ("none", "favor")])
def test_cola_calibration_against_a_hand_computation(tmp_path, calibration, expected):
    """Raw: positive 0.5, negative 0.3, neutral 0.2 (favor). Content-free: N/A (0.6, 0.2, 0.2),
    [MASK] (0.5, 0.3, 0.2), "" (0.7, 0.1, 0.2); their mean p_cf = (0.6, 0.2, 0.2).
    p / p_cf = (0.8333, 1.5, 1.0), sum 3.3333: calibrated (0.25, 0.45, 0.30): against."""
    client = Primed()
    scenario = ColaScenario(protocol="cola", models={"default": BASE}, calibration=calibration)
    _, transcript = run_item("cola", scenario, {"text": POST, "target": TARGET}, {BASE: client}, tmp_path / "r")
    assert transcript.outcome.prediction == expected
    (answer,) = answers(transcript)
    assert answer.measured.probabilities == {"positive": 0.5, "negative": 0.3, "neutral": 0.2}
    asked = choices(client)
    if calibration == "none":
        assert len(asked) == 1 and answer.measured.calibrated == {} and answer.measured.content_free == {}
        return
    assert answer.measured.calibration == "contextual" and answer.decision == "against"
    assert answer.measured.calibrated == {"positive": 0.25, "negative": 0.45, "neutral": 0.3}
    assert answer.measured.content_free == {"N/A": {"positive": 0.6, "negative": 0.2, "neutral": 0.2},
                                            "[MASK]": {"positive": 0.5, "negative": 0.3, "neutral": 0.2},
                                            "(empty)": {"positive": 0.7, "negative": 0.1, "neutral": 0.2}}
    assert "calibrated: positive 0.25, negative 0.45, neutral 0.30" in transcript.outcome.explanation
    # The same document around each content-free input: the post replaced, the arguments kept.
    real, *free = [d for d, _ in asked]  # the content-free twins are asked after the answer's own call
    assert [d.split('Post: "', 1)[1].split('"', 1)[0] for d in free] == ["N/A", "[MASK]", ""]
    assert all(d.split('Post: "')[0] == real.split('Post: "')[0] for d in free)
    judger = [c for c in transcript.calls if c.role == "judger"]
    assert [c.stage for c in judger] == ["calibration"] * 3 + ["conclusion"]  # the answer's call last
    # Re-computed from the saved transcript, without a model call.
    again = recalibrated(answer.measured.probabilities, answer.measured.content_free)
    assert {o: round(p, 4) for o, p in again.items()} == answer.measured.calibrated


def test_calibration_arithmetic():
    prior = content_free_prior([{"a": 0.6, "b": 0.4}, {"a": 0.8, "b": 0.2}])
    assert prior == pytest.approx({"a": 0.7, "b": 0.3})
    assert calibrate({"a": 0.7, "b": 0.3}, prior) == pytest.approx({"a": 0.5, "b": 0.5})  # the prior itself: uniform
    assert calibrate({"a": 0.5, "b": 0.5}, {"a": 1.0, "b": 0.0})["b"] == pytest.approx(1.0)  # never divides by 0
    assert recalibrated({"a": 0.5, "b": 0.5}, {}) is None


# ---------------------------------------------------------------- debate

def test_debate_agents_continue_one_document_round_by_round(tmp_path):
    client = base_client()
    scenario = DebateScenario(protocol="debate", models={"default": BASE}, rounds=1, calibration="contextual")
    _, transcript = run_item("debate", scenario, {"text": POST, "target": TARGET}, {BASE: client}, tmp_path / "r")
    written = turns(client)
    assert [r.prefix for _, r in written] == [f"Agent {n}: The text" for n in (1, 2, 3)] * 2
    first, second = written[0][0], written[3][0]
    header = ('3 agents answer a question about a text. Each explains its answer in a few sentences; then they '
              'read each other\'s answers and may change theirs.\n\nText: "' + POST + '"\nQuestion: What is the '
              f'stance of the text towards "{TARGET}": favor, against, neutral?')
    assert first == header + "\n\n[Round 1: each agent answers on its own.]"
    assert all(d == first for d, _ in written[:3])  # round 0: nobody sees anyone
    said = [m for m in transcript.messages if m.measured is None]
    labels = [m.decision for m in answers(transcript)]
    for n, (turn, label) in enumerate(zip(said[:3], labels[:3]), 1):
        assert f"\n\nAgent {n}: {turn.content}\n\nAgent {n}'s answer: {label}.\n\n" in second
    assert second.endswith("[Round 2: each agent has read the answers above and gives an updated answer.]")
    # Each label is read from the text, the question and the agent's turn alone ...
    real = [(d, r) for d, r in choices(client) if POST in d]
    question = f'Text: "{POST}"\nQuestion: What is the stance of the text towards "{TARGET}": favor, against, neutral?'
    assert [d for d, _ in real] == [f"{question}\n\nAgent {n % 3 + 1}: {m.content}" for n, m in enumerate(said)]
    assert [r.prefix for _, r in real] == [f"Agent {n}'s answer:" for n in (1, 2, 3)] * 2
    assert all(r.options == ("favor", "against", "neutral") and r.document for _, r in real)
    assert len(choices(client)) == 4 * 6  # each answer and its three content-free twins
    assert len(labels) == 6 and "unparsed" not in labels and transcript.outcome.prediction == "favor"
    assert all(m.measured.calibration == "contextual" for m in answers(transcript))
    # ... and calibrated on the same document with the text and the turn content-free (the same
    # for every item on the target).
    free = {d for d, r in choices(client) if r.prefix == "Agent 2's answer:" and POST not in d}
    assert free == {f'Text: "{c}"\nQuestion: What is the stance of the text towards "{TARGET}": favor, against, '
                    f'neutral?\n\nAgent 2:{" " + c if c else ""}' for c in ("N/A", "[MASK]", "")}


# ---------------------------------------------------------------- S2MAD

def test_s2mad_roles_continue_the_claims_document(tmp_path):
    client = base_client()
    scenario = S2madScenario(protocol="s2mad", models={"default": BASE}, k=2, rounds=1)
    comments = [{"text": "Police confirm it."}, {"text": "Fake, I drove over it."}]
    _, transcript = run_item("s2mad", scenario, {"claim": "The bridge collapsed.", "comments": comments},
                             {BASE: client}, tmp_path / "r")
    header = 'Notes on a social media post and the replies to it.\n\nPost: "The bridge collapsed."'
    asked = choices(client)
    scored = [(d, r) for d, r in asked if r.options == ("true", "false")]
    assert [d for d, _ in scored] == [f'{header}\n\nReply: "Police confirm it."', f'{header}\n\nReply: "Fake, I drove over it."']
    assert scored[0][1].prefix == "According to this reply, the post is"  # the paper's: does it support that the post is real?
    (classified,) = [(d, r) for d, r in asked if r.options == ("yes", "no")]
    assert classified[0] == header and classified[1].prefix.startswith("Does the post only express")
    # The scripted model puts 0.7 on the first option: each reply says true, p(true) - p(false) = 0.4,
    # so both are in P and the N debater reads none.
    scores = [m.decision for m in transcript.messages if m.action == "stance_separation"]
    assert scores == ["true", "true"]
    written = turns(client)
    assert [r.prefix for _, r in written] == ["Agent P: According to the replies,", "Agent N: According to the replies,"] * 2
    p_first = written[0][0]
    assert "Replies that Agent P read:\nPolice confirm it.\nFake, I drove over it." in p_first
    assert "Replies that Agent N read:\n(none)" in written[1][0]
    template_text = p_first.replace("Fake, I drove over it.", "").lower()  # what the templates wrote
    assert not any(word in template_text for word in ("fake", "real", "rumour"))  # no label before the turn
    p_debate = written[2][0]
    assert p_debate.index("\n\nAgent P: ") < p_debate.index("\n\nAgent N: ")  # its own turn first
    assert "Agent P's verdict: the post is fake." in p_debate
    assert p_debate.endswith("[Round 2: Agent P answers the other agent.]")
    verdicts = [(d, r) for d, r in asked if r.options == ("fake", "real") and "The bridge collapsed." in d]
    assert verdicts and all(r.prefix.endswith("'s verdict: the post is") for _, r in verdicts)
    opinion = next(m for m in transcript.messages if m.role == "debater_p" and m.action == "initial_opinion")
    assert opinion.content.startswith("According to the replies, ")
    assert verdicts[0][0] == f"{header}\n\nAgent P: {opinion.content}"  # the post and the turn alone
    assert transcript.outcome.prediction == "fake" and transcript.outcome.decided_by == "consensus"


def test_s2mad_verdicts_are_calibrated_by_content_free_turns_that_keep_their_opening(tmp_path):
    client = base_client()
    scenario = S2madScenario(protocol="s2mad", models={"default": BASE}, k=2, rounds=1, calibration="contextual")
    _, transcript = run_item("s2mad", scenario, {"claim": "The bridge collapsed.", "comments": [{"text": "Police confirm it."}]},
                             {BASE: client}, tmp_path / "r")
    twins = {d for d, r in choices(client) if r.options == ("fake", "real") and "The bridge collapsed." not in d}
    header = "Notes on a social media post and the replies to it."
    assert twins == {f'{header}\n\nPost: "{text}"\n\n{name}: According to the replies, {text}'.rstrip()
                     for text in ("N/A", "[MASK]", "") for name in ("Agent P", "Agent N")}
    verdict = next(m for m in transcript.messages if m.action == "initial_opinion_answer")
    assert verdict.measured.calibration == "contextual" and set(verdict.measured.content_free) == {"N/A", "[MASK]", "(empty)"}


def test_s2mad_turns_open_with_evidence_not_a_label():
    """The debaters' turns open with what their replies say, the judge's with the stronger
    evidence: no opening commits to a label (the embedded model wrote "The post is fake" after
    one that did)."""
    from moot.protocols.s2mad.document import AGENT, JUDGE, N, P, ClaimDocuments

    docs = ClaimDocuments(S2madScenario(protocol="s2mad").templates())
    assert {docs.opening(role) for role in (P, N, AGENT)} == {"According to the replies,"}
    assert docs.opening(JUDGE) == "The stronger evidence"
    labels = ("fake", "real", "true", "false", "rumour")
    assert not any(word in docs.opening(role).lower() for role in (P, N, JUDGE, AGENT) for word in labels)


# ---------------------------------------------------------------- negotiation

def test_negotiation_generator_and_discriminator_documents(tmp_path):
    client = base_client()
    scenario = NegotiationScenario(protocol="negotiation", models={"first": BASE, "second": BASE},
                                   allow_same_model=True, max_turns=1)
    _, transcript = run_item("negotiation", scenario, {"text": "A warm, funny film."}, {BASE: client}, tmp_path / "r")
    (generated, request), *_ = turns(client)
    assert generated == "Reviews and what their writers felt.\n\nInput: A warm, funny film."  # no format to recite
    assert request.prefix == "Reasoning: The writer" and {"Decision:", "\nInput"} <= set(request.stop)
    asked = choices(client)
    decision = next(r for _, r in asked if r.options == ("positive", "negative"))
    assert decision.prefix == "Decision:"
    checked, yes_no = next((d, r) for d, r in asked if r.options == ("yes", "no"))
    assert checked.startswith("Checking sentiment decisions") and checked.endswith("Decision: positive.")
    assert yes_no.prefix == "Correct:"
    assert transcript.outcome.prediction == "positive"


def test_negotiation_decisions_are_calibrated_by_content_free_turns_that_keep_their_opening(tmp_path):
    client = base_client()
    scenario = NegotiationScenario(protocol="negotiation", models={"first": BASE, "second": BASE},
                                   allow_same_model=True, max_turns=1, calibration="contextual")
    _, transcript = run_item("negotiation", scenario, {"text": "A warm, funny film."}, {BASE: client}, tmp_path / "r")
    decided = [(d, r) for d, r in choices(client) if r.options == ("positive", "negative")]
    twins = {d for d, _ in decided if "A warm, funny film." not in d}
    assert twins == {"\n\n".join(["Reviews and what their writers felt.", f"Input: {text}".strip(),
                                   f"Reasoning: The writer {text}".strip()]) for text in ("N/A", "[MASK]", "")}
    decision = next(m for m in transcript.messages if m.measured and m.measured.calibration)
    assert set(decision.measured.content_free) == {"N/A", "[MASK]", "(empty)"}
