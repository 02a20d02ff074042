"""One COLA item as every role's prompt sees it: its fields, what was said so far, the label sets
the judger answers with, and the chat messages or document rendered from the scenario's templates."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Mapping

from autogen_core.models import LLMMessage, SystemMessage, UserMessage

from moot.agents.prompts import inset, render
from moot.protocols.cola.schema import EXPERTS, JUDGER, ColaScenario, debater_name
from moot.protocols.items.document import ItemDocument, labelled
from moot.protocols.items.labels import LabelSet


def labels_of(s: ColaScenario) -> LabelSet:
    return LabelSet(tuple(s.labels), s.option_order, {lab: s.text_of(lab).option for lab in s.labels},
                    dict(s.aliases), letters=True)


def answer_labels(s: ColaScenario) -> LabelSet:
    """The labels as a base model's judger answers them: the words of `label_text.answer`."""
    return LabelSet(tuple(s.labels), tuple(s.labels), {lab: s.text_of(lab).answer for lab in s.labels},
                    dict(s.aliases))


def letters(labels: LabelSet) -> list[str]:
    return [chr(65 + i) for i in range(len(labels.options))]


def question(s: ColaScenario, target: str) -> str:
    if tuple(s.labels) in (("favor", "against", "neutral"), ("favor", "against", "none")):
        return f"in favor of or against {target}, or is neutral"
    phrases = [f"{s.text_of(lab).stance} {target}" for lab in s.labels]
    return ", ".join(phrases[:-1]) + f" or {phrases[-1]}"


def messages(templates: Mapping[str, str], key: str, fields: Mapping[str, object], role: str = "") -> list[LLMMessage]:
    """The role's system message (template `<role>_system`, if not empty) and its prompt `key`."""
    system = render(templates[f"{role or key}_system"], fields)
    prompt: list[LLMMessage] = [UserMessage(content=render(templates[key], fields), source="user")]
    return [SystemMessage(content=system), *prompt] if system else prompt


def judger_template(s: ColaScenario) -> str:
    if s.baseline:
        return f"baseline_{s.baseline}"
    explain = "_explain" if s.judger.output == "json" else ""
    return f"judger{explain}" if s.debate else f"judger{explain}_no_debate"


@dataclass(frozen=True)
class Item:
    """One item as every role's prompt sees it: its fields, and what the analysts and debaters
    said so far (analysis by analyst, argument by label). `document` is its document form's
    beginning (a base model's: moot.protocols.items.document), labelled as `labels` says."""

    s: ColaScenario
    templates: Mapping[str, str]
    fields: dict[str, str]
    analyses: dict[str, str] = field(default_factory=dict)
    arguments: dict[str, str] = field(default_factory=dict)

    @cached_property
    def labels(self) -> dict[str, str]:
        """Each role's label in the document (rendered once per item)."""
        t, fields = self.templates, self.fields
        found: dict[str, str] = {e: capitalised(render(t[f"label_{e}"], fields)) for e in self.s.experts}
        found.update({debater_name(lab): render(t["label_debater"], {**fields, "stance": self.s.text_of(lab).name})
                      for lab in self.s.labels})
        found[JUDGER] = render(t["label_judger"], fields)
        return found

    def document(self, *paragraphs: str) -> ItemDocument:
        """The header (with the post) and the analyses said so far, then `paragraphs`."""
        header = render(self.templates["document_header"], self.fields)
        return ItemDocument((header,), tuple(self.labels.values())).then(*self.said(self.analyses), *paragraphs)

    def judged(self) -> ItemDocument:
        """The judger's document: what it sees of the others (the arguments; without the debate,
        the analyses), its direction, and the post last, read right before the answer (so a
        content-free twin differs from it only there, and reuses the rest from the model's cache)."""
        t = self.templates
        return ItemDocument((render(t["document_judger_header"], self.fields),), tuple(self.labels.values())).then(
            *self.said(self.arguments if self.s.debate else self.analyses), render(t["document_judger"], self.fields),
            render(t["document_post"], self.fields))

    def said(self, turns: Mapping[str, str]) -> list[str]:
        """Analyses (by analyst) or arguments (by label) as labelled paragraphs, in order."""
        labels = self.labels
        if turns is self.analyses:
            return [labelled(labels[e], turns[e]) for e in EXPERTS if e in turns]
        return [labelled(labels[debater_name(lab)], turns[lab]) for lab in self.s.labels if lab in turns]

    def analyses_text(self) -> str:
        """The analyses as the chat prompts introduce them."""
        return " ".join(render(self.templates[f"{e}_analysis"], {**self.fields, "analysis": inset(self.analyses[e].strip())})
                        for e in EXPERTS if e in self.analyses)

    def content_free(self, text: str) -> "Item":
        """The item with its post replaced by a content-free input (the judger's input; what the
        analysts and debaters said stays, as the demonstrations of Zhao et al.'s prompts do)."""
        return replace(self, fields={**self.fields, "text": text})


def capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def judger_fields(item: Item, labels: LabelSet) -> dict[str, str]:
    s, t = item.s, item.templates
    arguments = " ".join(render(t["argument"], {"stance": s.text_of(lab).name, "argument": inset(item.arguments[lab].strip())})
                         for lab in s.labels if lab in item.arguments)
    return {**item.fields, "analyses": item.analyses_text(), "arguments": arguments,
            "question": question(s, item.fields["target"]), "choices": labels.choices(), "labels": ", ".join(s.labels)}
