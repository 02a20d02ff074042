"""The COLA judger's stance: asked in chat (an option letter or a structured stance), continued in
the item's document (a base model), or chosen by a person at its seat."""

from __future__ import annotations

import json
from typing import Optional

from autogen_core.models import LLMMessage

from moot.agents.prompts import render
from moot.contract.protocol import Outcome
from moot.kit import Asking, Message, Question, Seat, UNPARSED, UnitContext, shown_of
from moot.protocols.cola.item import Item, answer_labels, judger_fields, judger_template, letters, messages
from moot.protocols.cola.schema import JUDGER
from moot.protocols.items.choices import Answered, ask_choice, calibrates, document_method, how_read, method_for
from moot.protocols.items.document import in_document, labelled, speak
from moot.protocols.items.labels import LabelSet, stance_model


def judged_outcome(labels: LabelSet, answered: Answered, explanation: str = "") -> Outcome:
    prediction, given = labels.map(answered.text)
    by = f"{JUDGER} ({answered.method})" if answered.measured_read else JUDGER
    return Outcome(prediction, ((explanation or given) + how_read(answered)).strip(), answered.reply.text,
                   decided_by=by)


async def judge(ctx: UnitContext, item: Item, labels: LabelSet, stage: str, speaker: Optional[str] = None) -> Outcome:
    """The judger's answer about `item`: in its document (a base model) or in chat."""
    if in_document(ctx, JUDGER):
        return await judge_in_document(ctx, item, labels, stage, speaker)
    s = item.s
    fields = judger_fields(item, labels)
    prompt = messages(item.templates, judger_template(s), fields, JUDGER)
    if s.judger.output == "json":
        reply = await ctx.call(JUDGER, prompt, stance_model(s.labels), stage=stage,
                               decide=lambda text: labels.map(text)[0], speaker=speaker)
        return judged_outcome(labels, Answered(reply))
    method = "text" if s.baseline == "cot" else method_for(ctx, JUDGER, s.choice, "text")

    def content_free(text: str) -> list[LLMMessage]:
        return messages(item.templates, judger_template(s), judger_fields(item.content_free(text), labels), JUDGER)

    answered = await ask_choice(ctx, JUDGER, prompt, letters(labels), method, stage=stage, speaker=speaker,
                                decide=lambda text: labels.map(text)[0], content_free=content_free,
                                calibrated=calibrates(ctx, JUDGER, s.calibration))
    return judged_outcome(labels, answered)


async def judge_in_document(ctx: UnitContext, item: Item, labels: LabelSet, stage: str,
                            speaker: Optional[str]) -> Outcome:
    """A base model's judger: it reasons first (the chain-of-thought baseline), then its label is
    the most likely `label_text.answer` after `document_answer` (calibrated), then (the JSON
    variant) its explanation follows."""
    s, t = item.s, item.templates
    document = item.judged()
    label = item.labels[JUDGER]
    if s.baseline == "cot":
        reasoning = await speak(ctx, JUDGER, [], document, label, opening=render(t["opening_judger"], item.fields),
                                stage=stage, speaker=speaker)
        document = document.then(labelled(label, reasoning.text))
    words = answer_labels(s)
    answer = render(t["document_answer"], item.fields)
    method = document_method(s.choice)

    def content_free(text: str) -> list[LLMMessage]:
        return item.content_free(text).judged().messages()

    answered = await ask_choice(ctx, JUDGER, document.messages(), [words.option_words[lab] for lab in s.labels],
                                method, prefix=answer, document=True, content_free=content_free,
                                calibrated=calibrates(ctx, JUDGER, s.calibration), stage=stage, speaker=speaker,
                                decide=lambda text: words.map(text)[0])
    explanation = ""
    chosen = answered.option
    if s.judger.output == "json" and chosen is not None:
        explained = document.then(f"{answer} {chosen}.")
        explanation = (await speak(ctx, JUDGER, [], explained, render(t["label_explanation"], item.fields),
                                   opening=render(t["opening_explanation"], item.fields), stage=stage,
                                   speaker=speaker)).text
    return judged_outcome(answer_labels(s), answered, explanation)


def judger_asking(item: Item, labels: LabelSet, stage: str, seat: Seat) -> Asking:
    """The judger's turn a person takes (`--human judger`): shown its prompt, they choose the stance."""
    prompt = messages(item.templates, judger_template(item.s), judger_fields(item, labels), JUDGER)
    return Asking(seat.spec.name, JUDGER, item.labels[JUDGER], stage, stage,
                  (Question("stance", "The stance of the text", tuple(item.s.labels)),
                   Question("explanation", "Why (a sentence or two)")), shown=shown_of(prompt))


def person_judged(said: Message) -> Outcome:
    """The item's outcome from the stance a person at the judger's seat chose."""
    stance = said.decision or UNPARSED
    return Outcome(stance, said.content, json.dumps({"stance": stance, "explanation": said.content}, ensure_ascii=False),
                   decided_by=f"{JUDGER} (human)")
