"""One judge-eval item: the judge's one structured question, or that question resent to another model (rescore)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Annotated, Literal

from autogen_core.models import LLMMessage, SystemMessage, UserMessage
from pydantic import BaseModel, Field, create_model

from moot.agents.prompts import render
from moot.contract.protocol import Outcome, Rescore, Rescored
from moot.kit import UnitContext, last_call, resend
from moot.protocols.items.labels import LabelSet
from moot.protocols.judge_eval.schema import JUDGE, JudgeEvalScenario


@lru_cache(maxsize=None)
def label_model(labels: tuple[str, ...]) -> type[BaseModel]:
    """{label: one of labels, explanation: short text}; label first (scripted models rely on it)."""
    return create_model("JudgeLabel", label=(Literal[labels], ...),  # type: ignore[arg-type]  # a Literal made at run time
                        explanation=(Annotated[str, Field(max_length=200)], ...))


def label_set(s: JudgeEvalScenario) -> LabelSet:
    aliases = {"pro": "favor", "con": "against"} if s.task == "stance" else {}
    return LabelSet(tuple(s.labels), tuple(s.labels), {}, aliases)


async def run(s: JudgeEvalScenario, ctx: UnitContext) -> Outcome:
    """One item: the judge's label for it."""
    templates = s.templates()
    text, target = ctx.inputs["text"], ctx.inputs.get("target")
    if s.task == "stance" and not target:
        raise ValueError("stance needs a target: use a dataset with a target column")
    fields = {"name": s.judge_name, "persona": s.judge_persona, "text": text,
              "target": target or "the topic it discusses", "choices": ", ".join(s.labels),
              "labels": " or ".join(json.dumps(lab) for lab in s.labels)}
    messages: list[LLMMessage] = [SystemMessage(content=render(templates["system"], fields)),
                UserMessage(content=render(templates[s.task], fields), source="user")]
    labels = label_set(s)
    reply = await ctx.call(JUDGE, messages, label_model(tuple(s.labels)), stage=s.task,
                           decide=lambda reply: labels.map(reply)[0])
    prediction, explanation = labels.map(reply.text)
    return Outcome(prediction, explanation, reply.text, decided_by=JUDGE)


async def rescore(s: JudgeEvalScenario, job: Rescore, ctx: UnitContext) -> Rescored:
    """The judge's recorded question sent to another model."""
    call = last_call(job.transcript, JUDGE)
    if call is None:
        raise ValueError("the transcript has no judge call to send again")
    labels = label_set(s)
    reply = await resend(ctx, call, label_model(tuple(s.labels)), decide=lambda text: labels.map(text)[0])
    prediction, explanation = labels.map(reply.text)
    return Rescored(Outcome(prediction, explanation, reply.text, decided_by=JUDGE))
