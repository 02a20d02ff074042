"""COLA (Lan et al.): analysis stage, debating stage, stance conclusion — for one item.

1. Analysts (linguist, domain specialist, social media veteran) see only the text (and target)
   and run concurrently; they never see each other. Each is told its role in the system message.
2. One debater per label sees the text and the analyses and argues for its label. The stage runs
   as a group chat of AutoGen agents (moot.kit._stage) ordered by speaker_selection.cola;
   debaters ignore the thread.
3. The judger sees the text and every debater's argument (read from the thread) and answers one
   option; in the explainability variant with structured output {stance, explanation}.
A baseline (Table 2) is the judger alone, asked from the text with the baseline prompt.

A person may take any of these seats (`moot run --human SEAT`: an analyst, a debater, `analysts`,
`debaters`, the `judger`): shown the prompt the role's model would be sent, they write the analysis
or argument, or choose the judger's stance (and say why); the role's model stands by (a seat's
time limit). The analysts' and debaters' turns are asked together, a seat's one at a time.

The option letter (the judger with `output: option`, and the direct baseline) is read by the
scenario's `choice` (moot.protocols.items.choices): on the embedded model by likelihood, the paper's
prompt closed for scoring by a last line "Answer:" with " A", " B", " C" as the options (a chat
model's reply begins with the letter, as the prompt's constraint asks). The chain-of-thought
baseline reasons first and keeps its text answer.

On a base model (the embedded one) every role continues the item's document instead
(moot.protocols.items.document; the `document_*` and `label_*` templates): the analysts separate
branches after the post, each debater after the analyses, the judger after the arguments; the
judger's label is the most likely of the labels' `answer` words after `document_answer`, for
every variant (the chain-of-thought baseline reasons first, the JSON variant explains after).
A likelihood answer is calibrated by the scenario's `calibration`: the same prompt with the post
content-free (the analyses and arguments kept).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Awaitable, Callable, Mapping, Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import LLMMessage, SystemMessage, UserMessage

from moot.agents.prompts import inset, render
from moot.kit import (
    ANY_STAGE, Asking, Expected, Message, Question, Respond, Seat, StageAgent, UNPARSED, UnitContext, cancel_calls, expected, free_text,
    last_call, shown_of,
)
from moot.contract.protocol import InputField, Outcome, Protocol, Rescore, Rescored
from moot.protocols.cola.schema import EXPERTS, JUDGER, ColaScenario, debater_name
from moot.protocols.items.labels import LabelSet, stance_model
from moot.protocols.items.choices import Answered, ask_choice, calibrates, document_method, how_read, method_for
from moot.protocols.items.document import ItemDocument, in_document, labelled, speak
from moot.speaker_selection.cola import DebatePlan, next_speaker


@dataclass(frozen=True)
class ItemInput:
    text: str
    target: str
    role: Optional[str] = None  # domain specialist's role; None: chosen from the target


def labels_of(s: ColaScenario) -> LabelSet:
    return LabelSet(tuple(s.labels), s.option_order, {lab: s.text_of(lab).option for lab in s.labels},
                    dict(s.aliases), letters=True)


def question(s: ColaScenario, target: str) -> str:
    if tuple(s.labels) in (("favor", "against", "neutral"), ("favor", "against", "none")):
        return f"in favor of or against {target}, or is neutral"
    phrases = [f"{s.text_of(lab).stance} {target}" for lab in s.labels]
    return ", ".join(phrases[:-1]) + f" or {phrases[-1]}"


async def run(s: ColaScenario, ctx: UnitContext) -> Outcome:
    """One item: analyses, debate, the judger's stance."""
    given = ctx.inputs
    return await run_item(s, ctx, ItemInput(given["text"], given["target"], given.get("role") or s.input.role))


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


async def run_item(s: ColaScenario, ctx: UnitContext, item: ItemInput) -> Outcome:
    templates = s.templates()
    role = item.role or s.domain_role.for_target(item.target)
    start = Item(s, templates, {"text": item.text, "target": item.target, "role": role})

    async def analyse(expert: str) -> str:
        chat = messages(templates, expert, start.fields)

        async def by_model() -> str:
            document = start.document(render(templates[f"document_{expert}"], start.fields)) \
                if in_document(ctx, expert) else None
            return (await speak(ctx, expert, chat, document, start.labels[expert],
                                opening=render(templates[f"opening_{expert}"], start.fields), stage="analysis")).text

        return await free_turn(ctx, expert, start.labels[expert], "analysis", "Your analysis", chat, by_model)

    found = await asyncio.gather(*(analyse(e) for e in s.experts))
    analysed = replace(start, analyses=dict(zip(s.experts, found)))
    labels = labels_of(s)
    debaters = [lab for lab in s.labels] if s.debate else []
    # Debaters do not see each other, so their calls start together; the group chat then
    # takes their turns in the selection order and the judger reads them from the thread.
    arguing = {lab: asyncio.ensure_future(_argue(ctx, analysed, lab)) for lab in debaters}
    agents = [StageAgent(debater_name(lab), _awaiting(arguing[lab])) for lab in debaters]
    judged: dict[str, Outcome] = {}
    agents.append(StageAgent(JUDGER, _judger(ctx, analysed, labels, judged)))
    plan = DebatePlan(tuple(debater_name(lab) for lab in debaters), JUDGER)
    try:
        await ctx.group_chat(agents, lambda said: next_speaker(plan, [m.source for m in said]),
                             item.text, len(plan.order()))
    finally:
        cancel_calls(arguing.values())
    return judged["outcome"]


def judged_outcome(labels: LabelSet, answered: Answered, explanation: str = "") -> Outcome:
    prediction, given = labels.map(answered.text)
    by = f"{JUDGER} ({answered.method})" if answered.measured_read else JUDGER
    return Outcome(prediction, ((explanation or given) + how_read(answered)).strip(), answered.reply.text,
                   decided_by=by)


def answer_labels(s: ColaScenario) -> LabelSet:
    """The labels as a base model's judger answers them: the words of `label_text.answer`."""
    return LabelSet(tuple(s.labels), tuple(s.labels), {lab: s.text_of(lab).answer for lab in s.labels},
                    dict(s.aliases))


def letters(labels: LabelSet) -> list[str]:
    return [chr(65 + i) for i in range(len(labels.options))]


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


def judger_fields(item: Item, labels: LabelSet) -> dict[str, str]:
    s, t = item.s, item.templates
    arguments = " ".join(render(t["argument"], {"stance": s.text_of(lab).name, "argument": inset(item.arguments[lab].strip())})
                         for lab in s.labels if lab in item.arguments)
    return {**item.fields, "analyses": item.analyses_text(), "arguments": arguments,
            "question": question(s, item.fields["target"]), "choices": labels.choices(), "labels": ", ".join(s.labels)}


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


async def _argue(ctx: UnitContext, item: Item, label: str) -> str:
    s, t = item.s, item.templates
    key = "debater" if s.experts else "debater_no_analysis"
    fields = {**item.fields, "analyses": item.analyses_text(), "stance": s.text_of(label).stance}
    name = debater_name(label)
    chat = messages(t, key, fields, "debater")

    async def by_model() -> str:
        document = item.document(render(t[f"document_{key}"], fields)) if in_document(ctx, name) else None
        return (await speak(ctx, name, chat, document, item.labels[name], opening=render(t["opening_debater"], fields),
                            stage="debate")).text

    return await free_turn(ctx, name, item.labels[name], "debate", f"Your argument that the text is {fields['stance']} {item.fields['target']}",
                           chat, by_model)


async def free_turn(ctx: UnitContext, role: str, label: str, stage: str, prompt: str, chat: Sequence[LLMMessage],
                    by_model: Callable[[], Awaitable[str]]) -> str:
    """An analyst's or debater's turn: its person's, shown the role's prompt, else its model's."""
    def asking(seat: Seat) -> Asking:
        return Asking(seat.spec.name, role, label, stage, stage, (Question("text", prompt),), shown=shown_of(chat))

    return await ctx.person_or_model(ctx.seat(role), asking, by_model, lambda said: said.content, role=role,
                                     stage=stage, round=1, content=free_text)


def _awaiting(task: "asyncio.Future[str]") -> Respond:
    async def respond(thread: Sequence[BaseChatMessage]) -> str:
        return await task

    return respond


def _judger(ctx: UnitContext, item: Item, labels: LabelSet, judged: dict[str, Outcome]) -> Respond:
    async def respond(thread: Sequence[BaseChatMessage]) -> str:
        said = {m.source: m.to_text().strip() for m in thread if isinstance(m, BaseChatMessage)}
        seen = replace(item, arguments={lab: said[debater_name(lab)] for lab in item.s.labels
                                        if debater_name(lab) in said})
        stage = "baseline" if item.s.baseline else "conclusion"
        judged["outcome"] = outcome = await ctx.person_or_model(
            ctx.seat(JUDGER), lambda seat: judger_asking(seen, labels, stage, seat),
            lambda: judge(ctx, seen, labels, stage), person_judged, role=JUDGER, stage=stage, round=1,
            content=lambda given: (given.get("explanation", ""), given.get("stance", UNPARSED)))
        return outcome.raw or ""

    return respond


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


async def rescore(s: ColaScenario, job: Rescore, ctx: UnitContext) -> Rescored:
    """The judger again with another model, on what the analysts and debaters said (as recorded):
    nobody else is asked again."""
    if last_call(job.transcript, JUDGER) is None:
        raise ValueError("the transcript has no judger call to send again")
    given = job.transcript.started.inputs
    target = str(given.get("target", ""))
    fields = {"text": str(given.get("text", "")), "target": target,
              "role": str(given.get("role") or s.input.role or s.domain_role.for_target(target))}
    said = [m for m in job.transcript.messages if m.role != JUDGER]
    by_debater = {debater_name(lab): lab for lab in s.labels}
    item = Item(s, s.templates(), fields, {m.role: m.content for m in said if m.role in EXPERTS},
                {by_debater[m.role]: m.content for m in said if m.role in by_debater})
    stage = "baseline" if s.baseline else "conclusion"
    return Rescored(await judge(ctx, item, labels_of(s), stage, speaker=f"{JUDGER} (rescored)"))


def seats(s: ColaScenario) -> dict[str, tuple[str, ...]]:
    """The seats a person may take: each role, and the analysts or the debaters together."""
    found: dict[str, tuple[str, ...]] = {r: (r,) for r in s.roles()}
    if s.experts:
        found["analysts"] = tuple(s.experts)
    if s.debate:
        found["debaters"] = tuple(debater_name(lab) for lab in s.labels)
    return found


def scripted(s: ColaScenario) -> dict[str, Expected]:
    """A scripted analyst's or debater's turn is a plain sentence; the judger's answer (an option
    letter, a label, a structured stance) is closed: the scripted model's own rule answers it."""
    return {"analysis": expected("(scripted) My analysis: the wording of the text leans one way."),
            "debate": expected("(scripted) The analyses above support the stance I argue for."),
            ANY_STAGE: expected()}


PROTOCOL = Protocol(
    name="cola",
    title="COLA stance detection",
    paper="Lan et al. 2024, Stance Detection with Collaborative Role-Infused LLM-Based Agents",
    scenario=ColaScenario,
    policy=next_speaker,
    run=run,
    inputs=(InputField("text", "text", help="the text whose stance is judged"),
            InputField("target", "target", help="what the stance is towards"),
            InputField("role", "role", required=False,
                       help="the domain specialist's role (default: the dataset's, else from the target)")),
    result_name="stance",
    deciders=(JUDGER,),
    rescore=rescore,
    example="cola",
    calls=lambda s: float(len(s.experts) + (len(s.labels) if s.debate else 0) + 1),
    seats=seats,
    scripted=scripted,
)
