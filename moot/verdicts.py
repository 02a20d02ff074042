"""Closed-set outputs (judge verdicts, moderator decisions, evaluator scores) and their parsing.

Parsing is strict: a reply is accepted only if it is the expected JSON object (optionally in
a ```json fence) or, for a verdict, exactly one label and nothing else. Anything else is
recorded as unparsed with its raw text — never guessed (e.g. "there is no AGREEMENT yet").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Generic, Literal, Optional, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

CRITERIA = ("clarity", "relevance", "conciseness", "politeness", "engagement", "flow",
            "coherence", "responsiveness", "language_use", "emotional_intelligence")
CRITERIA_TEXT = {
    "clarity": "How clear is the exchange? Are the statements and responses easy to understand?",
    "relevance": "Do the responses stay on topic and contribute to the conversation's purpose?",
    "conciseness": "Is the dialogue free of unnecessary information or redundancy?",
    "politeness": "Are the participants respectful and considerate in their interaction?",
    "engagement": "Do the participants seem interested and actively involved in the dialogue?",
    "flow": "Is there a natural progression of ideas and responses?",
    "coherence": "Does the dialogue make logical sense as a whole?",
    "responsiveness": "Do the participants address each other's points adequately?",
    "language_use": "Is the grammar, vocabulary, and syntax appropriate for the context?",
    "emotional_intelligence": "Are the participants aware of and sensitive to the emotional tone?",
}
Score = Annotated[int, Field(ge=1, le=10, strict=True, json_schema_extra={"enum": list(range(1, 11))})]
Short = Annotated[str, Field(max_length=400)]


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


class JudgeGrade(Closed):
    """A grader's rating of one judge decision (Heller et al. §4.2, Table 5)."""

    score: Score
    explanation: Short


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


def output_schema(model: type[Closed]) -> dict:
    """JSON schema used for constrained decoding (grammar / json_schema / Ollama format)."""
    return model.model_json_schema()
