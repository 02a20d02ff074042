"""A conference turn's answer, and closed answers read from the model's probabilities.

With `choice: likelihood` the judge's verdict and the deciding moderator's decision are a closed
choice scored by the model (moot.models.requests.Choose): the closing option (AGREEMENT,
NEXT_TOPIC) needs a probability of at least the scenario's `agreement_threshold`. The evaluator's
ten criteria, its overall score and the grader's rating are each the expectation of the 1-10 score
under the model's probabilities (G-Eval; moot.models.requests.Score), asked one question per
criterion (one call each; a backend that can reads them all from one evaluation of the
document); the rationale is a separate free-text reply. The assessor is asked per reference item
whether the debate addressed it (yes or no, the more likely) and, for a yes, to copy the passage. A backend that cannot measure answers in
structured output instead (moot.kit._context); the turn's `Measured` record says which happened,
with the probabilities or distributions where they were measured.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Optional, Sequence, TypeVar

from autogen_core.models import LLMMessage, UserMessage

from moot.agents.conference.context import Said, Shown
from moot.agents.conference.coverage import NO, YES, item_text
from moot.agents.conference.document import TranscriptDocument
from moot.kit import Choose, Measured, OnText, Reply, Score, UnitContext, choice_method, cut_to_sentence
from moot.protocols.conference.verdicts import CRITERIA, CRITERIA_TEXT, EVIDENCE_CHARS, OVERALL_TEXT, criterion_title

ChatPrompt = Callable[[str, Mapping[str, object]], list[LLMMessage]]  # (template key, extra fields) -> messages
SCORED = (*CRITERIA, "overall")
Closed = TypeVar("Closed", Choose, Score)


@dataclass
class Answer:
    """A turn's reply: the message's content, its routing decision, the calls that made it, whether
    it was cut at its last whole sentence, and how a closed answer was read."""

    content: str
    replies: list[Reply] = field(default_factory=list)
    decision: Optional[str] = None
    cut: bool = False
    measured: Optional[Measured] = None


def in_document(ctx: UnitContext, role: str) -> bool:
    """A base model continues the transcript document; an instruction model is asked in chat."""
    return ctx.engine.model_kind(ctx.model(role), role) == "base"


def by_likelihood(choice: str, spec: str, base: bool = False) -> bool:
    """Whether closed answers of the model `spec` are read from its probabilities (the scenario's
    `choice`; `auto` picks likelihood on the embedded model and on a base model, `base`)."""
    return choice_method(choice, spec, "structured", base) == "likelihood"


def spoken(reply: Reply) -> tuple[str, bool]:
    """A free-text reply as the turn says it, and whether it was cut: a continuation comes cut
    already; a chat reply that hit the token bound is cut here to its last complete sentence (its
    call keeps the whole reply)."""
    detail = reply.call.detail
    if detail is not None and detail.cut:
        return reply.text, True
    if reply.call.finish_reason == "length":
        whole = reply.text.strip()
        cut = cut_to_sentence(whole)
        if cut and cut != whole:
            return cut, True
    return reply.text.strip(), False


def _method(replies: Sequence[Reply]) -> str:
    return "+".join(sorted({r.method for r in replies}))


def _rounded(reply: Reply) -> dict[str, float]:
    """A measured reply's probabilities, to 4 places."""
    return {o: round(p, 4) for o, p in reply.probabilities.items()}


def _notes(replies: Sequence[Reply]) -> str:
    notes = [r.call.detail.note for r in replies if not r.measured and r.call.detail and r.call.detail.note]
    return notes[0] if notes else ""


async def closing_choice(ctx: UnitContext, role: str, messages: Sequence[LLMMessage], request: Choose,
                         threshold: float, stage: str) -> tuple[Optional[bool], Measured, Reply]:
    """Whether the closing option (the request's first) is chosen: measured, when its probability
    reaches `threshold`; otherwise (a structured fallback), when it is the answer given. None: no
    readable answer."""
    reply = await ctx.call(role, messages, request=request, stage=stage, record=False)
    closing = request.options[0]
    if reply.measured:
        probabilities = _rounded(reply)
        return (probabilities.get(closing, 0.0) >= threshold,
                Measured(method=reply.method, probabilities=probabilities, threshold=threshold), reply)
    option = reply.option
    return (None if option is None else option == closing), Measured(method=reply.method, note=_notes([reply])), reply


async def expected_scores(ctx: UnitContext, role: str, questions: Sequence[tuple[str, Sequence[LLMMessage], Score]],
                          stage: str) -> tuple[dict[str, Optional[float]], Measured, list[Reply]]:
    """Each question's score (its expectation, or the structured integer after a fallback; None
    when unreadable), the distributions measured, and the calls."""
    scores: dict[str, Optional[float]] = {}
    distributions: dict[str, dict[str, float]] = {}
    replies = []
    for name, messages, request in questions:
        reply = await ctx.call(role, messages, request=request, stage=stage, record=False)
        replies.append(reply)
        value = reply.score
        scores[name] = None if value is None else round(value, 2)
        if reply.measured:
            distributions[name] = _rounded(reply)
    return scores, Measured(method=_method(replies), distributions=distributions, note=_notes(replies)), replies


def criterion_questions(doc: TranscriptDocument, shown: Sequence[Shown], topic: Optional[int], document: bool,
                        chat: ChatPrompt) -> list[tuple[str, list[LLMMessage], Score]]:
    """The evaluator's questions, one per criterion and overall: branches off the transcript
    document (a base model), asked as one batch, or the chat prompt `evaluator_criterion_turn`."""
    if not document:
        return [(name, chat("evaluator_criterion_turn", {"criterion": criterion_title(name),
                                                         "criterion_text": CRITERIA_TEXT.get(name, OVERALL_TEXT)}),
                 Score(lo=1, hi=10, prefix="Score (1-10):")) for name in SCORED]
    messages: list[LLMMessage] = [UserMessage(content=doc.text(shown), source="document")]
    scores = batched([doc.score(topic, criterion_title(name), CRITERIA_TEXT.get(name, OVERALL_TEXT))
                      for name in SCORED])
    return [(name, messages, score) for name, score in zip(SCORED, scores)]


def batched(requests: Sequence[Closed]) -> list[Closed]:
    """The requests, each naming all of them as its batch: asked of the same document, they are
    read together where the backend can (moot.models.requests)."""
    prefixes = tuple(r.prefix for r in requests)
    return [replace(r, batch=prefixes) for r in requests]


async def evaluate(ctx: UnitContext, role: str, speaker: str, doc: TranscriptDocument, shown: Sequence[Shown],
                   topic: Optional[int], document: bool, chat: ChatPrompt, stage: str,
                   on_text: Optional[OnText] = None) -> Answer:
    """The evaluator's (`speaker`'s, played by `role`'s model) expected scores of a topic's debate,
    then its rationale (see the module docstring). The content is the scores and rationale as JSON
    (moot.protocols.conference.verdicts.ExpectedScores)."""
    scores, measured, replies = await expected_scores(ctx, role, criterion_questions(doc, shown, topic, document, chat),
                                                      stage)
    if document:
        text = doc.text(shown, doc.direction("rationale", topic))
        said = await ctx.call(role, [UserMessage(content=text, source="document")], request=doc.continuation(text, speaker),
                              stage=stage, record=False, on_text=on_text)
    else:
        said = await ctx.call(role, chat("evaluator_rationale_turn", {}), stage=stage, record=False, on_text=on_text)
    rationale, cut = spoken(said)
    content = json.dumps({**scores, "rationale": rationale})
    return Answer(content, [*replies, said], cut=cut, measured=measured)


async def assess(ctx: UnitContext, role: str, doc: TranscriptDocument, debate: Sequence[Said], items: Sequence[Any],
                 topic: int, document: bool, chat: ChatPrompt, stage: str) -> Answer:
    """The assessor's answer on a topic's reference outcome, asked item by item: did the debate
    address it (read from the model's probabilities), and for a yes, the passage it copies from the
    debate. The content is the answer a structured assessor writes ({item: {evidence, covered}}),
    so its quotes are checked the same way (moot.agents.conference.coverage); an item without a
    readable yes or no is left out of it (unparsed)."""
    answers: dict[str, dict[str, object]] = {}
    distributions: dict[str, dict[str, float]] = {}
    asked, replies = [], []
    shared = [UserMessage(content=doc.assessed(debate, topic), source="document")] if document else []
    choices = batched([doc.assess_choice(item) for item in items]) if document else []
    for n, item in enumerate(items):
        fields = {"item": item_text(item)}
        messages = shared or chat("assessor_item_turn", fields)
        request = choices[n] if document else Choose(options=(YES, NO), prefix="Answer:")
        reply = await ctx.call(role, messages, request=request, stage=stage, record=False)
        asked.append(reply)
        replies.append(reply)
        if reply.measured:
            distributions[item.name] = _rounded(reply)
        if reply.option not in (YES, NO):
            continue
        evidence = ""
        if reply.option == YES:
            quote = await ctx.call(role, messages if document else chat("assessor_quote_turn", fields),
                                   request=doc.quote(item) if document else None, stage=stage, record=False)
            replies.append(quote)
            evidence = quote.text.strip()[:EVIDENCE_CHARS]
        answers[item.name] = {"evidence": evidence, "covered": reply.option == YES}
    measured = Measured(method=_method(asked), distributions=distributions, note=_notes(asked))
    return Answer(json.dumps(answers), replies, measured=measured)
