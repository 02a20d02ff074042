"""Closed-set outputs (judge verdicts, moderator decisions, evaluator scores) and their parsing.

Parsing is strict (moot.models.replies): a reply is accepted only if it is the expected JSON
object or, for a verdict, exactly one label and nothing else. Anything else is recorded as
unparsed with its raw text — never guessed (e.g. "there is no AGREEMENT yet").

The paper's judge answers in plain text (Heller et al. §4.2, Figs. A2-A3: "MORE DEBATE",
"AGREEMENT"); `read_judge_text` reads such a reply (see there), and `read_judge` is the one
place that says how a judge's reply is read in each form.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Annotated, Literal, Optional, Union

from pydantic import Field, create_model

from moot.kit import Closed, Parsed, parse_reply

CRITERIA = ("clarity", "relevance", "conciseness", "politeness", "engagement", "flow",
            "coherence", "responsiveness", "language_use", "emotional_intelligence")
CRITERIA_TEXT = {  # Heller et al. §3.2.1, verbatim; the evaluator's `overall` score is moot's addition
    "clarity": "How clear is the exchange? Are the statements and responses easy to understand?",
    "relevance": "Do the responses stay on topic and contribute to the conversation's purpose?",
    "conciseness": "Is the dialogue free of unnecessary information or redundancy?",
    "politeness": "Are the participants respectful and considerate in their interaction?",
    "engagement": "Do the participants seem interested and actively involved in the dialogue?",
    "flow": "Is there a natural progression of ideas and responses? Are there awkward pauses or interruptions?",
    "coherence": "Does the dialogue make logical sense as a whole?",
    "responsiveness": "Do the participants address each other's points adequately?",
    "language_use": "Is the grammar, vocabulary, and syntax appropriate for the context of the dialogue?",
    "emotional_intelligence": "Are the participants aware of and sensitive to the emotional tone of the dialogue?",
}
OVERALL_TEXT = "How good is the discussion as a whole?"  # moot's `overall`, asked like a criterion
Score = Annotated[int, Field(ge=1, le=10, strict=True, json_schema_extra={"enum": list(range(1, 11))})]
Expected = Annotated[float, Field(ge=1, le=10)]  # a score's expectation under the model's probabilities
Short = Annotated[str, Field(max_length=400)]


def score_text(value: float, expected: bool = False) -> str:
    """A score as people read it: `7` (an integer the model wrote), `6.4` or `5.0` (an expectation)."""
    return str(int(value)) if float(value).is_integer() and not expected else f"{value:.1f}"


def criterion_title(criterion: str) -> str:
    """`language_use` -> `Language use`: a criterion as a model reads it."""
    return criterion.replace("_", " ").capitalize()


class JudgeVerdict(Closed):
    LABEL, OTHER = "verdict", "reason"
    verdict: Literal["AGREEMENT", "MORE_DEBATE"]
    reason: Short


class ModeratorDecision(Closed):
    LABEL, OTHER = "decision", "message"
    decision: Literal["NEXT_TOPIC", "MORE_DEBATE"]
    message: Annotated[str, Field(max_length=1500)]


class EvaluatorScores(Closed):
    clarity: Score
    relevance: Score
    conciseness: Score
    politeness: Score
    engagement: Score
    flow: Score
    coherence: Score
    responsiveness: Score
    language_use: Score
    emotional_intelligence: Score
    overall: Score
    rationale: Short


class ExpectedScores(Closed):
    """The evaluator's scores read from the model's probabilities (G-Eval): each the expectation of
    the 1-10 score; the rationale a separate free-text reply."""

    clarity: Expected
    relevance: Expected
    conciseness: Expected
    politeness: Expected
    engagement: Expected
    flow: Expected
    coherence: Expected
    responsiveness: Expected
    language_use: Expected
    emotional_intelligence: Expected
    overall: Expected
    rationale: str


def read_scores(raw: str, measured: bool) -> Parsed[Union[EvaluatorScores, ExpectedScores]]:
    """An evaluator turn's scores: integers the model wrote (EvaluatorScores), or, for a turn whose
    scores were measured, expected scores (ExpectedScores)."""
    return parse_reply(ExpectedScores if measured else EvaluatorScores, raw)


class JudgeGrade(Closed):
    """A grader's rating of one judge decision (Heller et al. §4.2, Table 5)."""

    score: Score
    explanation: Short


EVIDENCE_CHARS = 300  # an assessor's quote: a passage, not the debate


class ItemVerdict(Closed):
    """The assessor's answer on one reference item: a quote from the debate first, then whether
    the debate covered the item (quoting before deciding)."""

    evidence: Annotated[str, Field(max_length=EVIDENCE_CHARS)]
    covered: bool


class CoverageReply(Closed):
    """The assessor's answer on a topic's reference outcome: one key per item (`coverage_model`)."""


@lru_cache(maxsize=64)
def coverage_model(items: tuple[str, ...]) -> type[CoverageReply]:
    """{item name: {evidence, covered}} for these items, in order, all required (one class per
    item list; the names are JSON keys, held as aliases of valid field names)."""
    fields = {f"item_{n}": (ItemVerdict, Field(alias=name)) for n, name in enumerate(items)}
    model: type[CoverageReply] = create_model(  # type: ignore[call-overload]  # fields named at run time
        "CoverageReply", __base__=CoverageReply, **fields)
    return model


_JUDGE_LABEL = re.compile(r"\b(?:(?P<more>more[\s_-]*debate)|agreement)\b", re.I)
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+|\n|$)")
_CLAUSE_BREAK = re.compile(r"[,;:()\[\]]|\s[-–—]+\s")
_NOT_PLAIN = re.compile(
    r"\b(?:not|no|never|neither|nor|cannot|without|lacks?|lacking|absence|yet\s+to|far\s+from|"  # negation
    r"almost|nearly|partial|partially|maybe|perhaps|possibly|probably|might|may|could|unclear|"  # hedges
    r"uncertain|close\s+to|if|whether|once|until|unless)\b|n't\b", re.I)


def read_judge(form: str, raw: str) -> Parsed[JudgeVerdict]:
    """A judge's reply read as its scenario asked for it: `structured` (moot's JSON object, or
    exactly one label) or `text` (the paper's plain reply, `read_judge_text`)."""
    return read_judge_text(raw) if form == "text" else parse_reply(JudgeVerdict, raw)


def read_judge_text(raw: str) -> Parsed[JudgeVerdict]:
    """The verdict of a plain-text reply ("AGREEMENT", "more debate.", "MORE_DEBATE - they still
    disagree on cost"): the label AGREEMENT or MORE DEBATE in any case or spacing (`_`, `-`, or
    none), as often as it likes. Unparsed, never guessed: no label; both labels; a label in a
    question, or in a clause that negates or hedges it ("there is no AGREEMENT yet", "AGREEMENT
    has not been reached", "almost agreement", "no more debate is needed"). The reason is left
    empty: the reply itself is the judge's word (a verdict event keeps it as `raw`)."""
    mentions = list(_JUDGE_LABEL.finditer(raw))
    labels: set[Literal["AGREEMENT", "MORE_DEBATE"]] = {"MORE_DEBATE" if m.group("more") else "AGREEMENT"
                                                          for m in mentions}
    if not labels:
        return Parsed(None, raw, "no verdict: neither AGREEMENT nor MORE DEBATE")
    if len(labels) > 1:
        return Parsed(None, raw, "both AGREEMENT and MORE DEBATE")
    for mention in mentions:
        problem = _plain_problem(raw, mention)
        if problem:
            return Parsed(None, raw, problem)
    return Parsed(JudgeVerdict(verdict=labels.pop(), reason=""), raw)


def _plain_problem(text: str, mention: re.Match[str]) -> Optional[str]:
    """Why a label mention is not a plain verdict: it is in a question, or its clause negates or
    hedges it; None when it is plain."""
    sentence = next(m for m in _SENTENCE.finditer(text) if m.start() <= mention.start() < m.end())
    quoted = " ".join(sentence.group().split())[:120]
    if sentence.group().rstrip().endswith("?"):
        return f"a question: {quoted}"
    before = _CLAUSE_BREAK.split(text[sentence.start():mention.start()])[-1]
    after = _CLAUSE_BREAK.split(text[mention.end():sentence.end()])[0]
    if _NOT_PLAIN.search(f"{before} {after}"):
        return f"negated or hedged: {quoted}"
    return None
