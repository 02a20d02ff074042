"""Closed-set outputs (judge verdicts, moderator decisions, evaluator scores) and their parsing.

Parsing is strict: a reply is accepted only if it is the expected JSON object (optionally in
a ```json fence) or, for a verdict, exactly one label and nothing else. Anything else is
recorded as unparsed with its raw text — never guessed (e.g. "there is no AGREEMENT yet").

The paper's judge answers in plain text (Heller et al. §4.2, Figs. A2-A3: "MORE DEBATE",
"AGREEMENT"); `read_judge_text` reads such a reply (see there), and `read_judge` is the one
place that says how a judge's reply is read in each form.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Generic, Literal, Optional, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

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


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JudgeVerdict(Closed):
    verdict: Literal["AGREEMENT", "MORE_DEBATE"]
    reason: Short


class ModeratorDecision(Closed):
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


def read_scores(raw: str, measured: bool) -> Parsed:
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
    return create_model("CoverageReply", __base__=CoverageReply, **fields)  # type: ignore[call-overload]


M = TypeVar("M", bound=Closed)


@dataclass(frozen=True)
class Parsed(Generic[M]):
    """A parse outcome: `value` is None when the reply could not be parsed (see `error`)."""

    value: Optional[M]
    raw: str
    error: Optional[str] = None


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)
_LABEL_FIELD = {JudgeVerdict: "verdict", ModeratorDecision: "decision"}


def loads(text: str):
    """json.loads that accepts raw control characters (newlines, tabs) inside strings: a model
    that breaks a line inside "explanation" still wrote JSON text (strict=False)."""
    return json.loads(text, strict=False)


def json_object(text: str) -> Optional[dict]:
    """The JSON object in a reply (bare, in a ```json fence, or between the first `{` and the
    last `}` of surrounding prose), parsed with `loads`; None if there is none."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = loads(body[start:end + 1])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def parse_reply(model: type[M], raw: str) -> Parsed[M]:
    """Parse `raw` into `model`, or return it unparsed with the reason."""
    text = raw.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    label = _bare_label(model, text)
    if label is not None:
        return Parsed(label, raw)
    try:
        data = loads(text)  # raw newlines inside strings are still JSON text
    except json.JSONDecodeError as exc:
        return Parsed(None, raw, f"not JSON: {exc.msg}")
    if isinstance(data, dict):
        data = _normalise_label(model, data)
    try:
        return Parsed(model.model_validate(data), raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(map(str, first["loc"])) or "reply"
        return Parsed(None, raw, f"{where}: {first['msg']}")


def _canonical(label: str) -> str:
    return re.sub(r"[\s-]+", "_", label.strip().upper())


def _normalise_label(model: type[Closed], data: dict) -> dict:
    """Accept "more debate" / "More-Debate" for MORE_DEBATE: same label, other spelling."""
    key = _LABEL_FIELD.get(model)
    if key and isinstance(data.get(key), str):
        data = {**data, key: _canonical(data[key])}
    return data


def _bare_label(model: type[M], text: str) -> Optional[M]:
    """A reply that is exactly one label (as the paper's judge answers) is unambiguous."""
    key = _LABEL_FIELD.get(model)
    if not key:
        return None
    label = _canonical(text.strip(" .!\"'"))
    allowed = model.model_fields[key].annotation.__args__
    if label not in allowed:
        return None
    other = "reason" if model is JudgeVerdict else "message"
    return model.model_validate({key: label, other: ""})


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
    labels = {"MORE_DEBATE" if m.group("more") else "AGREEMENT" for m in mentions}
    if not labels:
        return Parsed(None, raw, "no verdict: neither AGREEMENT nor MORE DEBATE")
    if len(labels) > 1:
        return Parsed(None, raw, "both AGREEMENT and MORE DEBATE")
    for mention in mentions:
        problem = _plain_problem(raw, mention)
        if problem:
            return Parsed(None, raw, problem)
    return Parsed(JudgeVerdict(verdict=labels.pop(), reason=""), raw)


def _plain_problem(text: str, mention: re.Match) -> Optional[str]:
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


def output_schema(model: type[Closed]) -> dict:
    """JSON schema used for constrained decoding (grammar / json_schema / Ollama format)."""
    return model.model_json_schema()
