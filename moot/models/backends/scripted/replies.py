"""What the scripted model writes: a valid object of whatever output schema it is asked for, read
from the schema alone, following its script and the marks a test put in the prompt.

- The script (tokens AGREEMENT, MORE_DEBATE, NEXT_TOPIC, GARBAGE, EMPTY, FAIL) answers closed
  questions: an output with a label field (a string with allowed values), or a free-text prompt
  offering two of the script's words ("AGREEMENT or MORE DEBATE"). Each such reply takes the next
  token: FAIL is a connection error, GARBAGE an unreadable reply, EMPTY an empty one; otherwise
  the answer is the option the token names (in the script's words or these synonyms: ALIASES),
  else a `SCRIPTED_LABEL=<label>` mark's, else the first option. Its text fields say
  `scripted <label>` when the script chose it, `(scripted) <field>` otherwise.
- A number is the `SCRIPTED_SCORE=x` mark of the last user message; else, on a scale (allowed
  values, or bounds), the client's score (the first allowed value if its score is not one, held
  within the bounds); else 0.
- A nested object per named thing (a checklist: one key per item) quotes the first sentence of
  the prompt's material (its last user message but the closing instruction) that names the
  thing as a word, and says true when there is one.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional, Sequence

from autogen_core.models import LLMMessage, UserMessage
from pydantic import BaseModel

SCRIPT_WORDS = ("AGREEMENT", "MORE_DEBATE", "NEXT_TOPIC")  # script tokens that name an answer
ALIASES = {"agreement": ("agree",), "more debate": ("disagree", "continue"), "next topic": ("move",)}
UNREADABLE = "I think there is no AGREEMENT yet, maybe DONE?"
LABEL_MARK = re.compile(r"SCRIPTED_LABEL=([A-Za-z0-9_-]+)")
SCORE_MARK = re.compile(r"SCRIPTED_SCORE=(-?\d+(?:\.\d+)?)")
_WORD = "|".join(w.replace("_", " ") for w in SCRIPT_WORDS)
OFFERED = re.compile(rf"\b({_WORD}) or ({_WORD})\b")  # a free-text prompt offering two of the script's words
Schema = dict[str, Any]  # a JSON Schema (pydantic's model_json_schema)


def normal(text: str) -> str:
    return text.strip().lower().replace("_", " ")


def named(token: str, options: Sequence[str]) -> Optional[str]:
    """The option a script token names, itself or in the script's synonyms (ALIASES)."""
    by_name = {normal(o): o for o in options}
    return next((by_name[n] for n in (normal(token), *ALIASES.get(normal(token), ())) if n in by_name), None)


def last_user_text(messages: Sequence[LLMMessage]) -> str:
    last = next((m for m in reversed(messages) if isinstance(m, UserMessage)), None)
    return str(last.content) if last else ""


def label_mark(messages: Sequence[LLMMessage]) -> tuple[Optional[str], str]:
    """(label, prompt) of the label script: the last `SCRIPTED_LABEL=<label>` marker in the
    latest user message that has one (test datasets put it in an item's text or comments, so
    a debate round whose last message quotes no item text answers as its opening did)."""
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            marks = LABEL_MARK.findall(str(message.content))
            if marks:
                return marks[-1], str(message.content)
    return None, ""


def take(script: list[str]) -> Optional[str]:
    """The script's next token, used up; FAIL raises."""
    token = script.pop(0) if script else None
    if token == "FAIL":
        raise ConnectionError("scripted failure")
    return token


def offered_reply(prompt: str, script: list[str]) -> Optional[str]:
    """A free-text prompt offering two of the script's words is answered in words; None: it offers none."""
    offer = OFFERED.search(prompt)
    if offer is None:
        return None
    token = take(script)
    if token in ("GARBAGE", "EMPTY"):
        return "" if token == "EMPTY" else UNREADABLE
    return named(token or "", offer.groups()) or offer.group(1)


def structured_reply(output: type[BaseModel], messages: Sequence[LLMMessage], script: list[str], score: float) -> str:
    """A JSON object of `output` (see the module docstring)."""
    schema = output.model_json_schema()
    fields: dict[str, Schema] = {k: resolve(v, schema) for k, v in schema.get("properties", {}).items()}
    label, _ = label_mark(messages)
    if label == "GARBAGE":
        return "(scripted) I cannot decide."
    chosen: Optional[str] = None
    if any(options_of(f) for f in fields.values()):
        token = take(script)
        if token in ("GARBAGE", "EMPTY"):
            return "" if token == "EMPTY" else UNREADABLE
        chosen = next((n for n in (named(token or "", options_of(f)) for f in fields.values()) if n), None)
    marked = SCORE_MARK.search(last_user_text(messages))
    value = Value(chosen, label, float(marked.group(1)) if marked else None, score, material(messages))
    return json.dumps({name: value.of(name, field) for name, field in fields.items()})


def resolve(field: Schema, schema: Schema) -> Schema:
    """A field's schema with a `$ref` to the output's definitions followed."""
    ref = field.get("$ref")
    if not isinstance(ref, str):
        return field
    found: Schema = schema.get("$defs", {}).get(ref.rsplit("/", 1)[-1], field)
    return found


def options_of(field: Schema) -> list[str]:
    """A label field's allowed values (none for other fields)."""
    allowed = field.get("enum", [field["const"]] if "const" in field else [])
    return [o for o in allowed if isinstance(o, str)]


def material(messages: Sequence[LLMMessage]) -> list[str]:
    """The sentences of the last user message but its closing instruction, a `Speaker: ` dropped."""
    text = last_user_text(messages).rsplit("\n\n", 1)[0]
    return [re.sub(r"^\w+: ", "", s.strip()) for s in re.split(r"(?<=[.!?])\s+|\n", text) if s.strip()]


class Value:
    """The value of each field of one structured reply."""

    def __init__(self, chosen: Optional[str], label: Optional[str], marked: Optional[float], score: float,
                 sentences: list[str]):
        self.chosen, self.label, self.marked, self.score, self.sentences = chosen, label, marked, score, sentences

    def of(self, name: str, field: Schema) -> object:
        options = options_of(field)
        if options:
            return next((o for o in (self.chosen, self.label) if o in options), options[0])
        kind = field.get("type")
        if kind in ("integer", "number"):
            number = self.number(field)
            return int(number) if kind == "integer" else number
        if kind == "boolean":
            return False
        if kind == "object":
            return self.quoted(name, field)
        return f"scripted {self.chosen.lower()}" if self.chosen else f"(scripted) {name}"

    def number(self, field: Schema) -> float:
        if self.marked is not None:
            return self.marked
        allowed, lo, hi = field.get("enum"), field.get("minimum"), field.get("maximum")
        if allowed:
            return self.score if self.score in allowed else float(allowed[0])
        if lo is not None or hi is not None:
            return min(max(self.score, lo if lo is not None else self.score), hi if hi is not None else self.score)
        return 0.0

    def quoted(self, name: str, field: Schema) -> dict[str, object]:
        """A nested object about `name`: its texts the first sentence naming it as a word, its other
        fields whether there is one."""
        said = next((s for s in self.sentences if re.search(rf"\b{re.escape(name)}\b", s, re.I)), "")
        inner = field.get("properties", {})
        return {k: said[:v.get("maxLength", len(said))] if v.get("type") == "string" else bool(said)
                for k, v in inner.items()}
