"""Closed answers of the item protocols, read one of three ways (the scenario's `choice`).

- `likelihood`: the model's probability of each option right after the prompt (a `Choose`
  request, moot.models.requests); the most likely option is the answer and the call records the
  probabilities. On a backend without log-probabilities it falls back to `structured`.
- `structured`: constrained output `{"answer": <option>}`.
- `text`: the reply as the paper prompts it, parsed by the protocol (moot.protocols.items.labels).

`auto` (moot.scenario.blocks.choice_method) is likelihood on the embedded model, else the
protocol's own way. A likelihood choice needs a prompt that ends where the option begins: in
document form (a base model: moot.protocols.items.document) the answer branches off the item's
document after a last line, the option following after a space; in chat form the reply itself
begins with the option.

A likelihood answer may be calibrated (the scenario's `calibration`; moot.models.calibration):
the same prompt is asked with the item's content replaced by each content-free input, and the
answer is the most likely option once each option's probability is divided by its content-free
one. The answer's message records the raw, content-free and calibrated probabilities.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from autogen_core.models import LLMMessage

from moot.kit import (
    CONTENT_FREE, CONTEXTUAL, Choose, Measured, Reply, UnitContext, answer_model, best, calibrate, choice_method,
    content_free_prior, json_object, rounded,
)

CALIBRATION = "calibration"  # the stage of the content-free calls
ContentFree = Callable[[str], Sequence[LLMMessage]]  # a content-free input -> the same prompt around it


@dataclass(frozen=True)
class Answered:
    """A closed answer: the reply that gave it, and (read from probabilities) how it was measured
    and calibrated. `text` is what the protocol maps onto a label."""

    reply: Reply
    measured: Optional[Measured] = None

    @property
    def option(self) -> Optional[str]:
        """The option chosen: the calibrated choice, the most likely one, or a structured answer's."""
        if self.measured is not None and self.measured.calibrated:
            return best(self.measured.calibrated)
        return self.reply.option

    @property
    def text(self) -> str:
        """The option when one was read, else the reply (a text answer, parsed by the protocol)."""
        return self.option if self.reply.measured and self.option is not None else self.reply.text

    @property
    def method(self) -> str:
        return self.reply.method

    @property
    def measured_read(self) -> bool:
        return self.reply.measured


async def ask_choice(ctx: UnitContext, role: str, messages: Sequence[LLMMessage], options: Sequence[str],
                     method: str, *, prefix: str = "Answer:", sep: str = " ", reply_prefix: str = "",
                     document: bool = False, content_free: Optional[ContentFree] = None, calibrated: bool = False,
                     stage: str = "", round: int = 1, decide: Optional[Callable[[str], Optional[str]]] = None,
                     speaker: Optional[str] = None) -> Answered:
    """The role's answer among `options`, read by `method` (see the module docstring); a likelihood
    answer is calibrated when `calibrated` and `content_free` builds the prompt around a
    content-free input. Recorded as the role's message (`decide(text)` its decision)."""
    choose = Choose(options=tuple(options), prefix=prefix, sep=sep, reply_prefix=reply_prefix, document=document)
    if method != "likelihood":
        output = answer_model(choose) if method == "structured" else None
        reply = await ctx.call(role, messages, output, stage=stage, round=round, decide=decide, speaker=speaker)
        return Answered(reply)
    reply = await ctx.call(role, messages, request=choose, stage=stage, round=round, record=False)
    replies = [reply]
    measured = None
    if reply.measured:
        measured = Measured(method=reply.method, probabilities=rounded(reply.probabilities))
        if calibrated and content_free is not None:
            free = await asyncio.gather(*(ctx.call(role, content_free(text), request=choose, stage=CALIBRATION,
                                                   round=round, record=False) for text in CONTENT_FREE))
            replies = [*free, reply]  # the answer's call last: it is the role's last call (a rescoring resends it)
            measured = calibrated_measure(measured, reply, dict(zip(CONTENT_FREE, free)))
    answered = Answered(reply, measured)
    if not all(r.replayed for r in replies):  # a continued unit's answer is in its log already
        message = ctx.message(reply, stage=stage, round=round, speaker=speaker, content=answered.text,
                              decision=decide(answered.text) if decide else None, measured=measured,
                              calls=len(replies))
        ctx.record_replies(replies, message)
    return answered


def calibrated_measure(measured: Measured, reply: Reply, free: dict[str, Reply]) -> Measured:
    """`measured` with the contextual calibration of `reply` by the content-free replies (those
    read from probabilities; none read: uncalibrated, with a note)."""
    found = {text or "(empty)": r.probabilities for text, r in free.items() if r.measured}
    if not found:
        return measured.model_copy(update={"note": "not calibrated: no content-free probabilities"})
    scaled = calibrate(reply.probabilities, content_free_prior(list(found.values())))
    return measured.model_copy(update={"calibration": CONTEXTUAL, "calibrated": rounded(scaled),
                                       "content_free": {k: rounded(v) for k, v in found.items()}})


def chosen_option(text: str) -> str:
    """The option a choice's reply names: the reply itself (likelihood), or a structured answer's."""
    data = json_object(text)
    return str(data["answer"]) if data and data.get("answer") is not None else text.strip()


def method_for(ctx: UnitContext, role: str, setting: str, default: str) -> str:
    """How `role`'s closed answer is read (moot.scenario.blocks.choice_method): `auto` is
    likelihood on the embedded model and on a base model, else `default`."""
    return choice_method(setting, ctx.model(role).spec, default,
                         ctx.engine.model_kind(ctx.model(role), role) == "base")


def document_method(setting: str) -> str:
    """How a base model's closed answer (in its document) is read: by likelihood, or structured
    when the scenario's `choice` says so (a document has no paper's text answer to parse)."""
    return "structured" if setting == "structured" else "likelihood"


def calibrates(ctx: UnitContext, role: str, setting: str) -> bool:
    """Whether a likelihood answer of `role` is calibrated: the scenario's `calibration`; `auto`
    calibrates on the embedded model."""
    return calibration_method(setting, ctx.model(role).spec) == CONTEXTUAL


def calibration_method(setting: str, spec: str) -> str:
    if setting != "auto":
        return setting
    return CONTEXTUAL if choice_method("auto", spec, "") == "likelihood" else "none"


def how_read(answered: Answered) -> str:
    """" (by likelihood: A 0.21, B 0.70, C 0.09; calibrated: ...)" for a measured answer, "" otherwise;
    a fallback says so."""
    reply = answered.reply
    if reply.measured:
        spread = ", ".join(f"{o} {p:.2f}" for o, p in reply.probabilities.items())
        measured = answered.measured
        if measured is not None and measured.calibrated:
            spread += "; calibrated: " + ", ".join(f"{o} {p:.2f}" for o, p in measured.calibrated.items())
        return f" (by {reply.method}: {spread})"
    note = reply.call.detail.note if reply.call.detail else ""
    return f" ({note})" if note else ""
