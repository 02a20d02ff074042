"""COLA (Lan et al.): analysis stage, debating stage, stance conclusion — for one item.

1. Analysts (linguist, domain specialist, social media veteran) see only the text (and target)
   and run concurrently; they never see each other. Each is told its role in the system message.
2. One debater per label sees the text and the analyses and argues for its label. The stage runs
   as an AutoGen group chat ordered by speaker_selection.cola; debaters ignore the thread.
3. The judger sees the text and every debater's argument (read from the thread) and answers one
   option; in the explainability variant with structured output {stance, explanation}.
A baseline (Table 2) is the judger alone, asked from the text with the baseline prompt.

The option letter (the judger with `output: option`, and the direct baseline) is read by the
scenario's `choice` (moot.protocols.items.choices): on the embedded model by likelihood, the paper's
prompt closed for scoring by a last line "Answer:" with " A", " B", " C" as the options (a chat
model's reply begins with the letter, as the prompt's constraint asks). The chain-of-thought
baseline reasons first and keeps its text answer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import LLMMessage, SystemMessage, UserMessage

from moot.agents.prompts import render
from moot.engine.stage import StageAgent, cancel_calls
from moot.contract.protocol import InputField, Outcome, Protocol, Rescore, Rescored
from moot.protocols.cola.schema import EXPERTS, JUDGER, ColaScenario, debater_name
from moot.protocols.items.labels import LabelSet, stance_model
from moot.protocols.items.choices import ask_choice, how_read, method_for
from moot.engine.context import Reply, UnitContext
from moot.engine.rescore import last_call, recorded_messages
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


def messages(templates, key: str, fields, role: str = "") -> list[LLMMessage]:
    """The role's system message (template `<role>_system`, if not empty) and its prompt `key`."""
    system = render(templates[f"{role or key}_system"], fields)
    prompt = [UserMessage(content=render(templates[key], fields), source="user")]
    return [SystemMessage(content=system), *prompt] if system else prompt


def judger_template(s: ColaScenario) -> str:
    if s.baseline:
        return f"baseline_{s.baseline}"
    explain = "_explain" if s.judger.output == "json" else ""
    return f"judger{explain}" if s.debate else f"judger{explain}_no_debate"


async def run_item(s: ColaScenario, ctx: UnitContext, item: ItemInput) -> Outcome:
    templates = s.templates()
    role = item.role or s.domain_role.for_target(item.target)
    base = {"text": item.text, "target": item.target, "role": role}

    async def analyse(expert: str) -> str:
        return (await ctx.call(expert, messages(templates, expert, base), stage="analysis")).text

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
    judged: dict[str, Reply] = {}
    agents.append(StageAgent(JUDGER, _judger(s, ctx, templates, base, analyses_text, labels, judged)))
    plan = DebatePlan(tuple(debater_name(lab) for lab in debaters), JUDGER)
    try:
        await ctx.group_chat(agents, lambda said: next_speaker(plan, [m.source for m in said]),
                             item.text, len(plan.order()))
    finally:
        cancel_calls(arguing.values())
    return judged_outcome(labels, judged["reply"])


def judged_outcome(labels: LabelSet, reply: Reply) -> Outcome:
    prediction, explanation = labels.map(reply.text)
    by = f"{JUDGER} ({reply.method})" if reply.measured else JUDGER
    return Outcome(prediction, (explanation + how_read(reply)).strip(), reply.text, decided_by=by)


def letters(labels: LabelSet) -> list[str]:
    return [chr(65 + i) for i in range(len(labels.options))]


async def ask_judger(s: ColaScenario, ctx: UnitContext, prompt: list[LLMMessage], labels: LabelSet,
                     stage: str, speaker: Optional[str] = None) -> Reply:
    """The judger's answer: an option letter read by the scenario's `choice`, or (the explainability
    variant, the chain-of-thought baseline) its reply as the prompt asks for it."""
    decide = lambda text: labels.map(text)[0]  # noqa: E731
    if s.judger.output == "json":
        return await ctx.call(JUDGER, prompt, stance_model(s.labels), stage=stage, decide=decide, speaker=speaker)
    method = "text" if s.baseline == "cot" else method_for(ctx, JUDGER, s.choice, "text")
    return await ask_choice(ctx, JUDGER, prompt, letters(labels), method, stage=stage, decide=decide,
                            speaker=speaker)


async def _argue(s: ColaScenario, ctx: UnitContext, templates, base, analyses_text: str, label: str) -> str:
    key = "debater" if s.experts else "debater_no_analysis"
    fields = {**base, "analyses": analyses_text, "stance": s.text_of(label).stance}
    return (await ctx.call(debater_name(label), messages(templates, key, fields, "debater"), stage="debate")).text


def _awaiting(task: "asyncio.Future[str]"):
    async def respond(thread: Sequence[BaseChatMessage]) -> str:
        return await task

    return respond


def _judger(s: ColaScenario, ctx: UnitContext, templates, base, analyses_text: str,
            labels: LabelSet, judged: dict[str, Reply]):
    async def respond(thread: Sequence[BaseChatMessage]) -> str:
        said = {m.source: m.content.strip() for m in thread if isinstance(m, BaseChatMessage)}
        arguments = " ".join(render(templates["argument"], {"stance": s.text_of(lab).name,
                                                            "argument": said[debater_name(lab)]})
                             for lab in s.labels if debater_name(lab) in said)
        fields = {**base, "analyses": analyses_text, "arguments": arguments,
                  "question": question(s, base["target"]), "choices": labels.choices(),
                  "labels": ", ".join(s.labels)}
        prompt = messages(templates, judger_template(s), fields, JUDGER)
        reply = await ask_judger(s, ctx, prompt, labels, "baseline" if s.baseline else "conclusion")
        judged["reply"] = reply
        return reply.text

    return respond


async def rescore(s: ColaScenario, job: Rescore, ctx: UnitContext) -> Rescored:
    """The judger again with another model, on its recorded prompt (the analyses and arguments
    as they were): nobody else is asked again."""
    call = last_call(job.transcript, JUDGER)
    if call is None:
        raise ValueError("the transcript has no judger call to send again")
    labels = labels_of(s)
    reply = await ask_judger(s, ctx, recorded_messages(call), labels, call.stage, speaker=f"{JUDGER} (rescored)")
    return Rescored(judged_outcome(labels, reply))


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
)
