"""Reading a closed reply: a JSON object (bare, fenced, or inside prose) into a typed model.

Parsing is strict: a reply is accepted only if it is the expected JSON object (optionally in a
```json fence) or, for a model that declares a label field, exactly one label and nothing else.
Anything else is recorded as unparsed with its raw text and the reason — never guessed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Optional, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, ValidationError


class Closed(BaseModel):
    """A closed reply's schema. LABEL names its label field, if a reply that is only the label
    (e.g. "AGREEMENT") is unambiguous; OTHER the free-text field left empty then."""

    model_config = ConfigDict(extra="forbid")
    LABEL: ClassVar[Optional[str]] = None
    OTHER: ClassVar[str] = ""


M = TypeVar("M", bound=Closed)


@dataclass(frozen=True)
class Parsed(Generic[M]):
    """A parse outcome: `value` is None when the reply could not be parsed (see `error`)."""

    value: Optional[M]
    raw: str
    error: Optional[str] = None


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


def loads(text: str) -> Any:
    """json.loads that accepts raw control characters (newlines, tabs) inside strings: a model
    that breaks a line inside "explanation" still wrote JSON text (strict=False)."""
    return json.loads(text, strict=False)


def json_object(text: str) -> Optional[dict[str, Any]]:
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


def _normalise_label(model: type[Closed], data: dict[str, Any]) -> dict[str, Any]:
    """Accept "more debate" / "More-Debate" for MORE_DEBATE: same label, other spelling."""
    key = model.LABEL
    if key and isinstance(data.get(key), str):
        data = {**data, key: _canonical(data[key])}
    return data


def _bare_label(model: type[M], text: str) -> Optional[M]:
    """A reply that is exactly one label (as the paper's judge answers) is unambiguous."""
    key = model.LABEL
    if not key:
        return None
    label = _canonical(text.strip(" .!\"'"))
    allowed = get_args(model.model_fields[key].annotation)
    if label not in allowed:
        return None
    return model.model_validate({key: label, model.OTHER: ""})

