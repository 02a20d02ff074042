"""Closed label sets: the structured answer model and mapping a reply onto a label.

A reply maps onto a label if it is JSON with a `stance` (or `label`) the label set knows, or
plain text that names exactly one option letter, option word, label or alias. Anything else
is `unparsed` (metrics count it as wrong) and the raw text is kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Literal, Mapping, Optional, Sequence

from pydantic import BaseModel, create_model

from moot.metrics import UNPARSED

DEFAULT_ALIASES = {"none": "neutral", "pro": "favor", "con": "against", "support": "favor",
                   "supportive": "favor", "oppose": "against", "opposed": "against",
                   "in favor": "favor", "in favour": "favor", "favour": "favor"}


def stance_model(labels: Sequence[str], name: str = "StanceAnswer") -> type[BaseModel]:
    """{stance: one of labels, explanation: str} for constrained / structured output."""
    return create_model(name, stance=(Literal[tuple(labels)], ...),  # type: ignore[valid-type]
                        explanation=(str, ""))  # no maxLength: llama.cpp grammars cannot repeat 2000x


@dataclass(frozen=True)
class LabelSet:
    """The protocol's labels, the judger's options (A, B, C... in order) and aliases."""

    labels: tuple[str, ...]
    options: tuple[str, ...]
    option_words: Mapping[str, str] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)

    def choices(self) -> str:
        """`A: Against B: Favor C: Neutral` as printed in the paper's judger prompt."""
        return " ".join(f"{chr(65 + i)}: {self.option_words.get(lab, lab)}"
                        for i, lab in enumerate(self.options))

    def map(self, reply: str) -> tuple[str, str]:
        """(label or 'unparsed', explanation) of a judger reply."""
        data = _json_object(reply)
        cut = re.search(r'\{\s*"(?:stance|label)"\s*:\s*"([^"]+)"', reply) if data is None else None
        if cut:  # JSON cut off by max_tokens after the label: the label still counts
            return (self.label_of(cut.group(1)) or UNPARSED), ""
        if data is not None:
            value = data.get("stance", data.get("label"))
            label = self.label_of(str(value)) if value is not None else None
            return (label or UNPARSED), str(data.get("explanation", "")).strip()
        return (self.label_of(reply) or UNPARSED), ""

    def label_of(self, text: str) -> Optional[str]:
        words = self._words()
        clean = " ".join(text.strip().split()).strip(" .!\"'*`").lower()
        if clean in words:
            return words[clean]
        letter = re.match(r"^\(?([a-z])\s*(?:[\):.]|$|\s)", clean)
        if letter and ord(letter.group(1)) - 97 < len(self.options):
            return self.options[ord(letter.group(1)) - 97]
        found = {lab for word, lab in words.items() if re.search(rf"\b{re.escape(word)}\b", clean)}
        return found.pop() if len(found) == 1 else None

    def last_label(self, reply: str) -> str:
        """The label named last in a free-text reply ("... please choose: Fake, Real" answers
        end with their choice); 'unparsed' when no label word occurs."""
        clean = reply.lower()
        found = [(m.end(), lab) for word, lab in self._words().items()
                 for m in re.finditer(rf"\b{re.escape(word)}\b", clean)]
        return max(found)[1] if found else UNPARSED

    def _words(self) -> dict[str, str]:
        words = {k.lower(): v for k, v in {**DEFAULT_ALIASES, **self.aliases}.items() if v in self.labels}
        words.update({w.lower(): lab for lab, w in self.option_words.items() if lab in self.labels})
        words.update({lab.lower(): lab for lab in self.labels})
        return words


def _json_object(text: str) -> Optional[dict]:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(text[start:end + 1])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
