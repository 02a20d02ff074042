"""COLA (Lan et al.): analysis stage, debating stage, stance conclusion — for one item.

1. Analysts (linguist, domain specialist, social media veteran) see only the text (and target)
   and run concurrently; they never see each other.
2. One debater per label sees the text and the analyses and argues for its label. The stage runs
   as an AutoGen group chat ordered by speaker_selection.cola; debaters ignore the thread.
3. The judger sees the text and every debater's argument (read from the thread) and answers one
   option; in the JSON variant with structured output {stance, explanation}.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import UserMessage

from moot.agents.prompts import render
from moot.agents.stage import StageAgent, run_group_chat
from moot.protocols.cola_schema import EXPERTS, ColaScenario
from moot.protocols.context import StageContext
from moot.protocols.items import Outcome
from moot.protocols.labels import LabelSet, stance_model
from moot.speaker_selection.cola import DebatePlan, next_speaker

NAME = "cola"
RESULT_NAME = "stance"  # how the CLI names the prediction
SCHEMA = ColaScenario
JUDGER = "judger"


@dataclass(frozen=True)
class ItemInput:
    id: str
    text: str
    target: str
    role: Optional[str] = None  # domain specialist's role; None: chosen from the target
    gold: Optional[str] = None


def labels_of(s: ColaScenario) -> LabelSet:
    return LabelSet(tuple(s.labels), s.option_order, {lab: s.text_of(lab).option for lab in s.labels},
                    dict(s.aliases), letters=True)


def roles(s: ColaScenario) -> list[str]:
    debaters = [debater_name(lab) for lab in s.labels] if s.debate else []
    return list(s.experts) + debaters + [JUDGER]


def debater_name(label: str) -> str:
    return "debater_" + "".join(c if c.isalnum() else "_" for c in label)


def question(s: ColaScenario, target: str) -> str:
    if tuple(s.labels) in (("favor", "against", "neutral"), ("favor", "against", "none")):
        return f"in favor of or against {target}, or is neutral"
    phrases = [f"{s.text_of(lab).stance} {target}" for lab in s.labels]
    return ", ".join(phrases[:-1]) + f" or {phrases[-1]}"


async def run_item(s: ColaScenario, ctx: StageContext, item: ItemInput) -> Outcome:
    templates = s.templates()
    role = item.role or s.domain_role.for_target(item.target)
    base = {"text": item.text, "target": item.target, "role": role}

    async def analyse(expert: str) -> str:
        prompt = render(templates[expert], base)
        return (await ctx.call(expert, [UserMessage(content=prompt, source="user")], stage="analysis")).text

    found = await asyncio.gather(*(analyse(e) for e in s.experts))
    analyses = dict(zip(s.experts, found))
    analyses_text = " ".join(render(templates[f"{e}_analysis"], {**base, "analysis": analyses[e].strip()})
                             for e in EXPERTS if e in analyses)
    labels = labels_of(s)
    debaters = [lab for lab in s.labels] if s.debate else []
    # Debaters do not see each other, so their calls start together; the group chat then
    # takes their turns in the selection order and the judger reads them from the thread.
    arguing = {lab: asyncio.ensure_future(_argue(s, ctx, templates, base, analyses_text, lab))
               for lab in debaters}
    agents = [StageAgent(debater_name(lab), _awaiting(arguing[lab])) for lab in debaters]
    judged: dict[str, str] = {}
    agents.append(StageAgent(JUDGER, _judger(s, ctx, templates, base, analyses_text, labels, judged)))
    plan = DebatePlan(tuple(debater_name(lab) for lab in debaters), JUDGER)
    try:
        thread = await run_group_chat(agents, lambda said: next_speaker(plan, [m.source for m in said]),
                                      item.text, len(plan.order()))
    finally:
        for task in arguing.values():
            task.cancel()
    prediction, explanation = labels.map(judged["raw"])
    contributions = {**analyses, **{m.source: m.content for m in thread}}
    return Outcome(prediction, explanation, judged["raw"], contributions)


async def _argue(s: ColaScenario, ctx: StageContext, templates, base, analyses_text: str, label: str) -> str:
    key = "debater" if s.experts else "debater_no_analysis"
    prompt = render(templates[key], {**base, "analyses": analyses_text, "stance": s.text_of(label).stance})
    reply = await ctx.call(debater_name(label), [UserMessage(content=prompt, source="user")], stage="debate")
    return reply.text


def _awaiting(task: "asyncio.Future[str]"):
    async def respond(thread: Sequence[BaseChatMessage]) -> str:
        return await task

    return respond


def _judger(s: ColaScenario, ctx: StageContext, templates, base, analyses_text: str,
            labels: LabelSet, judged: dict[str, str]):
    async def respond(thread: Sequence[BaseChatMessage]) -> str:
        said = {m.source: m.content.strip() for m in thread if isinstance(m, BaseChatMessage)}
        arguments = " ".join(render(templates["argument"], {"stance": s.text_of(lab).name,
                                                            "argument": said[debater_name(lab)]})
                             for lab in s.labels if debater_name(lab) in said)
        fields = {**base, "analyses": analyses_text, "arguments": arguments,
                  "question": question(s, base["target"]), "choices": labels.choices(),
                  "labels": ", ".join(s.labels)}
        prompt = render(templates["judger" if s.debate else "judger_no_debate"], fields)
        output = None
        if s.judger.output == "json":
            prompt += "\n\n" + render(templates["judger_json"], fields)
            output = stance_model(s.labels)
        reply = await ctx.call(JUDGER, [UserMessage(content=prompt, source="user")], output, stage="conclusion")
        judged["raw"] = reply.text
        return reply.text

    return respond


def item_input(s: ColaScenario, item_id: str, text: Optional[str], target: Optional[str],
               role: Optional[str] = None, gold: Optional[str] = None) -> ItemInput:
    if not text or not target:
        missing = "text" if not text else "target"
        raise ValueError(f"COLA needs a {missing}: give input.{missing} in the scenario, "
                         f"--input {missing}=..., or a dataset with a {missing} column")
    return ItemInput(item_id, text, target, role or s.input.role, gold)


INPUT_KEYS = ("text", "target", "role")


def from_fields(s: ColaScenario, item_id: str, fields: dict, gold: Optional[str] = None) -> ItemInput:
    """An item from the scenario's `input:` merged with `--input key=value` pairs."""
    return item_input(s, item_id, fields.get("text"), fields.get("target"), fields.get("role"), gold)


def from_dataset(s: ColaScenario, raw) -> ItemInput:
    """An item from a dataset row (moot.datasets.Item)."""
    return item_input(s, raw.id, raw.text, raw.target, None, raw.label)
