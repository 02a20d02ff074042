"""The negotiation's document form: what the generator and the discriminator continue on a base
model (moot.protocols.items.document), built from the templates (agents/prompts/negotiation.yaml).

The generator's document holds the task, its demonstrations, the input and each earlier turn with
the discriminator's explanation of why it was wrong; the discriminator's, the task, its
demonstrations and the generator's reasoning and decision. Each is a function of the input text,
so the same document around a content-free input (calibration) is built alike.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from moot.agents.prompts import inset, render
from moot.protocols.items.document import ItemDocument, labelled

Demos = Sequence[Mapping[str, str]]  # each demonstration's fields (Negotiator.demo_fields)


class Documents:
    """The documents of one item's negotiations, from the scenario's templates and its options."""

    def __init__(self, templates: Mapping[str, str], options: str):
        self.templates, self.options = templates, options
        t = templates
        self.called = tuple(dict.fromkeys([t["label_reasoning"], t["label_explanation"], "Input", "Decision",
                                           "Correct"]))

    def document(self, *paragraphs: str) -> ItemDocument:
        return ItemDocument(tuple(paragraphs), self.called)

    def free_turn(self, who: str, text: str) -> str:
        """A content-free `who` turn (calibration): its opening words, which are the template's, not
        the item's, then the content-free text."""
        return f"{' '.join(self.templates[f'opening_{who}'].split())} {text}".strip()

    def generator(self, text: str, turns: Sequence[tuple[str, str, str]], demos: Demos) -> ItemDocument:
        """The generator's document: the task, its demonstrations, the input, then each earlier
        turn (reasoning, decision) and the discriminator's explanation of why it was wrong."""
        t = self.templates
        paragraphs = [render(t["document_header"], {"options": self.options}),
                      *(render(t["document_demo"], d) for d in demos), render(t["document_input"], {"text": text})]
        for reasoning, decision, explanation in turns:
            paragraphs += [labelled(t["label_reasoning"], reasoning), f"{t['document_decision']} {decision}.",
                           render(t["document_disagree"], {"explanation": inset(explanation)})]
        return self.document(*paragraphs)

    def discriminator(self, text: str, reasoning: str, decision: str, demos: Demos) -> ItemDocument:
        t = self.templates
        return self.document(render(t["document_discriminator_header"], {"options": self.options}),
                             *(render(t["document_discriminator_demo"], d) for d in demos),
                             render(t["document_decided"], {"text": text, "reasoning": inset(reasoning),
                                                            "decision": decision}))
