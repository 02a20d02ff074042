"""Closed label sets: the structured answer model and mapping a reply onto a label.

The one rule every protocol uses (`LabelSet.decide` / `LabelSet.map`): a reply maps onto a
label only when it is unambiguous; otherwise it is `unparsed` (metrics count it as wrong)
and the raw text is kept by the caller. Unambiguous means one of:

1. JSON (also in a ```json fence, raw newlines inside strings allowed) whose `stance`,
   `label`, `decision` or `answer` is exactly one label (or alias, option word, or option
   letter when the prompt printed letters); JSON cut off by max_tokens after such a value
   still counts. JSON with another value is unparsed — never a guess from its prose.
2. The whole reply, stripped of punctuation and markdown, is exactly one label / alias /
   option word, or an option letter ("B", "(B)", "B: Favor" when the word agrees).
3. Decisive markers: "Decision: X", "Answer: X", "Final answer: X", "Stance: X",
   "Verdict: X", "Sentiment: X", "Label: X", "Prediction: X", "the answer is X" (the
   negotiation generator's "Decision: " format), and the reply's last line being exactly
   one option (S2MAD's "at the end, please choose the answer from the following options").
   A marker is decisive only if its value names exactly ONE label and no negation; all
   decisive markers of a reply must name the same label.
4. A conclusion: the reply's last sentence opens with a concluding word ("Therefore", "Thus",
   "So", "Hence", "In conclusion", "Overall", "Based on ...", ...) or says "I choose / select /
   conclude / determine", and names exactly one label with no negation ("Therefore, the post
   is fake." / "Based on the analysis, I choose: Fake."). It counts like a decisive marker.
   Only the last sentence: a conclusion followed by more text, a conclusion naming both
   labels ("...fake rather than real") or negating one ("...is not fake") stays unparsed.

So a reply that merely repeats the prompt's option list ("...end with "Decision: " and one
of: positive, negative." / "choose the answer from the following options: Fake, Real")
names several labels without a decisive marker and is unparsed — it is not mapped onto
whichever option happens to be named last.
"""

from __future__ import annotations

import re
from functools import lru_cache
from dataclasses import dataclass, field
from typing import Literal, Mapping, Optional, Sequence

from pydantic import BaseModel, create_model

from moot.kit import UNPARSED, json_object

DEFAULT_ALIASES = {"none": "neutral", "pro": "favor", "con": "against", "support": "favor",
                   "supportive": "favor", "oppose": "against", "opposed": "against",
                   "in favor": "favor", "in favour": "favor", "favour": "favor"}
JSON_KEYS = ("stance", "label", "decision", "answer")
_MARKER = re.compile(r"\b(?:final\s+)?(?:answer|decision|stance|verdict|sentiment|label|prediction)"
                     r"\b[*_]*\s*(?:is\b\s*:?|:|=)\s*(?P<value>[^\n]*)", re.I)
_CUT_JSON = re.compile(r'\{\s*"(?:stance|label|decision|answer)"\s*:\s*"([^"\n]+)"', re.I)
_CONCLUSION = re.compile(r"^(?:therefore|thus|hence|so|consequently|accordingly|ultimately|finally|overall|"
                         r"conclusion|in\s+(?:conclusion|summary|sum|short|the\s+end)|"
                         r"to\s+(?:conclude|sum\s+up|summarize)|based\s+on|after\s+(?:considering|weighing|evaluating))\b"
                         r"|\bI\s+(?:would\s+)?(?:choose|chose|select|pick|conclude|determine)\b", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|cannot)\b|n't\b", re.I)
_EDGE = " \t\r\n.,;:!?\"'*`_()[]{}<>#-"


def stance_model(labels: Sequence[str], name: str = "StanceAnswer") -> type[BaseModel]:
    """{stance: one of labels, explanation: str} for constrained / structured output (one class
    per label set: building a model and its schema takes a millisecond, and every item asks)."""
    return _stance_model(tuple(labels), name)


@lru_cache(maxsize=64)
def _stance_model(labels: tuple[str, ...], name: str) -> type[BaseModel]:
    return create_model(name, stance=(Literal[labels], ...),  # type: ignore[arg-type]  # a Literal made at run time
                        explanation=(str, ""))  # no maxLength: llama.cpp grammars cannot repeat 2000x


@dataclass(frozen=True)
class LabelSet:
    """The protocol's labels, the options in prompt order, option words and aliases.
    `letters`: the prompt printed the options as letters (COLA's "A: Against B: Favor")."""

    labels: tuple[str, ...]
    options: tuple[str, ...]
    option_words: Mapping[str, str] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)
    letters: bool = False

    def choices(self) -> str:
        """`A: Against B: Favor C: Neutral` as printed in the paper's judger prompt."""
        return " ".join(f"{chr(65 + i)}: {self.option_words.get(lab, lab)}"
                        for i, lab in enumerate(self.options))

    def map(self, reply: str) -> tuple[str, str]:
        """(label or 'unparsed', explanation) of a reply, by the module's rule."""
        data = json_object(reply)
        if data is not None and any(k in data for k in JSON_KEYS):
            value = next(data[k] for k in JSON_KEYS if k in data)
            label = self.exact(str(value)) if value is not None else None
            return (label or UNPARSED), str(data.get("explanation", "")).strip()
        if data is None:
            cut = _CUT_JSON.search(reply)
            if cut:  # JSON cut off by max_tokens after the label: the label still counts
                return (self.exact(cut.group(1)) or UNPARSED), ""
        return self.decide(reply), ""

    def decide(self, reply: str) -> str:
        """The label of a free-text reply, or 'unparsed' (rules 2 and 3 of the module)."""
        whole = self.exact(reply)
        if whole:
            return whole
        found = {self._named_once(m.group("value")) for m in _MARKER.finditer(reply)}
        lines = [line for line in reply.splitlines() if line.strip(_EDGE)]
        if lines:
            found.add(self.exact(lines[-1]))
            found.add(self._concluded(lines[-1]))
        named = {label for label in found if label is not None}
        return named.pop() if len(named) == 1 else UNPARSED

    def exact(self, text: str) -> Optional[str]:
        """The label `text` is exactly (label, alias, option word, or option letter), else None."""
        words = self._words()
        clean = _clean(text)
        if clean in words:
            return words[clean]
        if not self.letters:
            return None
        letter = re.fullmatch(r"\(?([a-z])\)?(?:\s*[:.)-]?\s+(.+)|\s*[:.)-])?", clean)
        if letter and ord(letter.group(1)) - 97 < len(self.options):
            option = self.options[ord(letter.group(1)) - 97]
            rest = letter.group(2)
            return option if rest is None or words.get(_clean(rest)) == option else None
        return None

    def _named_once(self, value: str) -> Optional[str]:
        """A marker's value: exactly one label, or text naming exactly one label and no negation."""
        label = self.exact(value)
        if label or _NEGATION.search(value):
            return label
        clean = _clean(value)
        found = {lab for word, lab in self._words().items() if re.search(rf"\b{re.escape(word)}\b", clean)}
        return found.pop() if len(found) == 1 else None

    def _concluded(self, line: str) -> Optional[str]:
        """Rule 4: the label a concluding last sentence names, if exactly one and not negated."""
        sentences = [part for part in _SENTENCE_END.split(line.strip()) if part.strip(_EDGE)]
        last = sentences[-1] if sentences else ""
        if "?" in last:  # a question concludes nothing
            return None
        last = last.strip(_EDGE)
        if not _CONCLUSION.search(last) or _NEGATION.search(last):
            return None
        return self._named_once(last)

    def _words(self) -> dict[str, str]:
        words = {k.lower(): v for k, v in {**DEFAULT_ALIASES, **self.aliases}.items() if v in self.labels}
        words.update({w.lower(): lab for lab, w in self.option_words.items() if lab in self.labels})
        words.update({lab.lower(): lab for lab in self.labels})
        return words


def _clean(text: str) -> str:
    return " ".join(text.split()).strip(_EDGE).lower()
