"""Closed answers of the item protocols, read one of three ways (the scenario's `choice`).

- `likelihood`: the model's probability of each option right after the prompt (a `Choose`
  request, moot.models.requests); the most likely option is the answer and the call records the
  probabilities. On a backend without log-probabilities it falls back to `structured`.
- `structured`: constrained output `{"answer": <option>}`.
- `text`: the reply as the paper prompts it, parsed by the protocol (moot.protocols.items.labels).

`auto` (moot.scenario.blocks.choice_method) is likelihood on the embedded model, else the
protocol's own way. A likelihood choice needs a prompt that ends where the option begins: in
document form (a base model) the prompt is closed by a last line `prefix` ("Answer:"), the option
following after a space; in chat form the reply itself begins with the option.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from autogen_core.models import LLMMessage

from moot.models.requests import Choose, answer_model
from moot.engine.context import Reply, UnitContext
from moot.scenario.blocks import choice_method
from moot.models.replies import json_object


async def ask_choice(ctx: UnitContext, role: str, messages: Sequence[LLMMessage], options: Sequence[str],
                     method: str, *, prefix: str = "Answer:", sep: str = " ", reply_prefix: str = "",
                     stage: str = "", round: int = 1, decide: Optional[Callable[[str], Optional[str]]] = None,
                     speaker: Optional[str] = None) -> Reply:
    """The role's answer among `options`, read by `method` (see the module docstring)."""
    choose = Choose(options=tuple(options), prefix=prefix, sep=sep, reply_prefix=reply_prefix)
    if method == "likelihood":
        return await ctx.call(role, messages, request=choose, stage=stage, round=round, decide=decide,
                              speaker=speaker)
    output = answer_model(choose) if method == "structured" else None
    return await ctx.call(role, messages, output, stage=stage, round=round, decide=decide, speaker=speaker)


def chosen_option(text: str) -> str:
    """The option a choice's reply names: the reply itself (likelihood), or a structured answer's."""
    data = json_object(text)
    return str(data["answer"]) if data and data.get("answer") is not None else text.strip()


def method_for(ctx: UnitContext, role: str, setting: str, default: str) -> str:
    return choice_method(setting, ctx.model(role).spec, default)


def how_read(reply: Reply) -> str:
    """" (by likelihood: A 0.21, B 0.70, C 0.09)" for a measured answer, "" otherwise; a fallback
    says so."""
    if reply.measured:
        spread = ", ".join(f"{o} {p:.2f}" for o, p in reply.probabilities.items())
        return f" (by {reply.method}: {spread})"
    note = reply.call.detail.note if reply.call.detail else ""
    return f" ({note})" if note else ""
