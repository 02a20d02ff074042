"""One COLA unit run: the analysts concurrently, then the debaters and the judger as a group chat
in the order speaker_selection.cola gives; each turn its person's, else its model's."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Awaitable, Callable, Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import LLMMessage

from moot.agents.prompts import render
from moot.contract.protocol import Outcome
from moot.kit import Asking, Question, Respond, Seat, StageAgent, UNPARSED, UnitContext, cancel_calls, free_text, shown_of
from moot.protocols.cola.item import Item, labels_of, messages
from moot.protocols.cola.judger import judge, judger_asking, person_judged
from moot.protocols.cola.schema import JUDGER, ColaScenario, debater_name
from moot.protocols.items.document import in_document, speak
from moot.protocols.items.labels import LabelSet
from moot.speaker_selection.cola import DebatePlan, next_speaker


@dataclass(frozen=True)
class ItemInput:
    text: str
    target: str
    role: Optional[str] = None  # domain specialist's role; None: chosen from the target


async def run(s: ColaScenario, ctx: UnitContext) -> Outcome:
    """One item: analyses, debate, the judger's stance."""
    given = ctx.inputs
    return await run_item(s, ctx, ItemInput(given["text"], given["target"], given.get("role") or s.input.role))


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
