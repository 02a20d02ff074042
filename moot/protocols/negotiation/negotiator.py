"""One negotiation of an item (Sun et al.): a group chat of AutoGen agents
(speaker_selection.negotiation), the generator and the discriminator in turn.

Demonstrations: the k nearest training items (knn); each LLM writes the reasoning chain of a demo
as generator and the explanation of a demo as discriminator (cached, so shared across items).
The generator reasons and decides ("Decision: X", mapped by the shared rule of
moot.protocols.items.labels: no decisive label = no decision, never a default); the discriminator
answers {attitude, explanation, decision} (structured output). "yes" with the generator's decision
as its decision is a consensus (outcome.agreed); anything else returns its explanation to the
generator, up to max_turns.

The discriminator's yes/no is read by the scenario's `choice` (moot.protocols.items.choices). The
default is the paper's structured reply. With `likelihood` (`auto` on the embedded model) the
discriminator prompt is closed where its JSON answer begins, `{"attitude": "` (a last line in
document form; the reply's beginning, prefilled, on an instruction model), and " yes" / "no" are
scored as what follows; a "yes" agrees with the generator's decision, and only a "no" asks for the
structured reply, for its explanation (the attitude stays the measured "no"). With `text` the
same prompt is answered without a schema and parsed. On a base model each turn continues a
document (document); a person's turns: seats.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, Mapping, Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage
from pydantic import BaseModel, create_model

from moot.agents.prompts import inset, render
from moot.kit import Message, Seat, StageAgent, UNPARSED, UnitContext, json_object
from moot.protocols.items.choices import ask_choice, calibrates, chosen_option, document_method, method_for
from moot.protocols.items.document import ItemDocument, in_document, labelled, speak
from moot.protocols.items.labels import LabelSet
from moot.protocols.negotiation.document import Demos, Documents
from moot.protocols.negotiation.outcome import Result, agreed
from moot.protocols.negotiation.schema import NegotiationScenario
from moot.protocols.negotiation.seats import (
    DECISION, DISC, GEN, discriminated, discriminator_asking, generated, generator_asking,
)
from moot.speaker_selection.conference import Turn
from moot.speaker_selection.negotiation import AGREE, NegotiationPlan, next_speaker


@dataclass(frozen=True)
class ItemInput:
    id: str
    text: str


def labels_of(s: NegotiationScenario) -> LabelSet:
    return LabelSet(tuple(s.labels), tuple(s.labels), {lab: lab for lab in s.labels}, dict(s.aliases))


class _Verdict(BaseModel):
    attitude: Literal["yes", "no"]
    explanation: str = ""


@lru_cache(maxsize=16)
def verdict_model(labels: tuple[str, ...]) -> type[BaseModel]:
    return create_model("DiscriminatorVerdict", __base__=_Verdict,
                        decision=(Literal[labels], ...))  # type: ignore[arg-type]  # a Literal made at run time


class Negotiator:
    """Everything one item's negotiations share: prompts, demos per LLM, the context."""

    def __init__(self, s: NegotiationScenario, ctx: UnitContext, item: ItemInput, demos: list[tuple[str, str]]):
        self.s, self.ctx, self.item, self.demos = s, ctx, item, demos
        self.templates, self.labels = s.templates(), labels_of(s)
        self.options = ", ".join(s.labels)
        self.verdict = verdict_model(tuple(s.labels))
        self.documents = Documents(self.templates, self.options)
        self.measured = False  # a closed answer was read from the model's probabilities

    async def _ask(self, llm: str, prompt: str, stage: str, output: Optional[type[BaseModel]] = None,
                   **record: Any) -> str:
        return (await self.ctx.call(llm, [UserMessage(content=prompt, source="user")], output, stage=stage,
                                    **record)).text

    async def _say(self, llm: str, chat: str, document: ItemDocument, who: str, stage: str, round: int = 1) -> str:
        """A free-text turn: the chat prompt, or (a base model) a `who` turn of `document`."""
        t = self.templates
        return (await speak(self.ctx, llm, [UserMessage(content=chat, source="user")], document, t[f"label_{who}"],
                            opening=t[f"opening_{who}"], stage=stage, round=round)).text

    async def demo_fields(self, gen: str, disc: str) -> list[dict[str, str]]:
        """Each demonstration (input, decision) with the generator's reasoning chain for it and
        the discriminator's explanation of it."""
        t, docs = self.templates, self.documents

        async def one(text: str, decision: str) -> dict[str, str]:
            fields = {"text": text, "decision": decision}
            chain = await self._say(gen, render(t["demo_reasoning"], fields),
                                    docs.document(render(t["document_demo_input"], fields)), "reasoning",
                                    "demo_reasoning")
            fields["reasoning"] = inset(chain.strip())
            why = await self._say(disc, render(t["demo_explanation"], fields),
                                  docs.document(render(t["document_decided"], fields), f"{t['document_correct']} yes."),
                                  "explanation", "demo_explanation")
            fields["explanation"] = inset(why.strip().replace('"', "'"))
            return fields

        return list(await asyncio.gather(*(one(text, d) for text, d in self.demos)))

    async def negotiate(self, gen: str, disc: str) -> Result:
        demos = await self.demo_fields(gen, disc)
        t = self.templates
        gen_demos = "\n\n".join(render(t["generator_demo"], d) for d in demos)
        stage = f"{gen}->{disc}"
        history: list[LLMMessage] = [UserMessage(content=render(t["generator"], {
            "text": self.item.text, "options": self.options, "demonstrations": gen_demos}), source="user")]
        verdicts: list[tuple[str, Optional[str], str]] = []  # (attitude, decision, explanation)
        reasoned: list[tuple[str, str]] = []  # a base model's (reasoning, decision) per turn

        async def generate(thread: Sequence[BaseChatMessage]) -> str:
            if verdicts:  # the chat form's history (a base model's document is built from `reasoned`)
                history.append(UserMessage(content=render(t["generator_revise"], {
                    "explanation": inset(verdicts[-1][2]), "options": self.options}), source="user"))
            round = len(verdicts) + 1

            async def by_model() -> str:
                if in_document(self.ctx, gen):
                    turns = [(r, d, v[2]) for (r, d), v in zip(reasoned, verdicts)]
                    reasoning, decision = await self.generate_in_document(gen, stage, round, turns, demos)
                    reasoned.append((reasoning, decision))
                    return f"{reasoning}\nDecision: {decision}"
                return (await self.ctx.call(gen, list(history), stage=stage, round=round, decide=self._decision)).text

            def by_person(said: Message) -> str:
                reasoned.append((said.content.rsplit(DECISION, 1)[0], said.decision or UNPARSED))
                return said.content

            reply = await self.ctx.person_or_model(
                self.seat_of(GEN, gen), lambda seat: generator_asking(seat, self.s.labels, gen, stage, round, history),
                by_model, by_person, role=gen, stage=stage, round=round, content=generated)
            history.append(AssistantMessage(content=reply, source=GEN))
            return reply

        async def discriminate(thread: Sequence[BaseChatMessage]) -> str:
            reasoning = thread[-1].to_text()
            decision = self._decision(reasoning)
            round = len(verdicts) + 1
            prompt = render(t["discriminator"], {
                "text": self.item.text, "reasoning": inset(reasoning), "decision": decision or "",
                "options": self.options,
                "demonstrations": "\n\n".join(render(t["discriminator_demo"], d) for d in demos)})

            async def by_model() -> tuple[str, tuple[str, Optional[str], str]]:
                if in_document(self.ctx, disc):
                    shown = reasoned[-1][0] if len(reasoned) > len(verdicts) else reasoning
                    return await self.discriminate_in_document(disc, shown, decision, stage, round, demos)
                return await self.discriminator_verdict(disc, prompt, stage, decision, round)

            def content(given: Mapping[str, str]) -> tuple[str, Optional[str]]:
                text = discriminated(given, decision)
                return text, self._attitude(text) if given else None

            reply, verdict = await self.ctx.person_or_model(
                self.seat_of(DISC, disc), lambda seat: discriminator_asking(seat, self.s.labels, disc, stage, round,
                                                                            prompt, decision),
                by_model, lambda said: (said.content, self._verdict(said.content)), role=disc, stage=stage,
                round=round, content=content)
            verdicts.append(verdict)
            return reply

        def attitude(said: Sequence[BaseChatMessage], n: int) -> Optional[str]:
            """A discriminator turn counts as "yes" only if it is a consensus (see `agreed`)."""
            return AGREE if agreed(self._decision(said[n - 1].to_text()), self._verdict(said[n].to_text())) else "no"

        plan = NegotiationPlan(GEN, DISC, self.s.max_turns)
        select = lambda said: next_speaker(plan, [  # noqa: E731
            Turn(m.source, attitude(said, n) if m.source == DISC else None) for n, m in enumerate(said)])
        thread = await self.ctx.group_chat([StageAgent(GEN, generate), StageAgent(DISC, discriminate)],
                                      select, self.item.text, 2 * self.s.max_turns)
        gen_decision = self._decision(thread[-2].to_text())
        done = bool(verdicts) and agreed(gen_decision, verdicts[-1])
        return Result(gen, disc, done, gen_decision if done else None)

    # ------------------------------------------------------------------ a person's turns (seats)
    def seat_of(self, role: str, llm: str) -> Optional[Seat]:
        """The seat a person takes in this turn: the role's, else the LLM's."""
        return self.ctx.seat(role) or self.ctx.seat(llm)

    # ------------------------------------------------------------------ a base model's turns
    async def generate_in_document(self, gen: str, stage: str, round: int, turns: Sequence[tuple[str, str, str]],
                                   demos: Demos) -> tuple[str, str]:
        """The generator's reasoning turn, then its decision: the label most likely after
        `document_decision` (calibrated: the input, reasonings and explanations content-free)."""
        t, docs = self.templates, self.documents
        document = docs.generator(self.item.text, turns, demos)
        reasoning = await self._say(gen, "", document, "reasoning", stage, round)
        label = t["label_reasoning"]

        def content_free(text: str) -> list[LLMMessage]:
            reasoned, explained = docs.free_turn("reasoning", text), docs.free_turn("explanation", text)
            blank = [(reasoned, d, explained) for _, d, _ in turns]
            return docs.generator(text, blank, demos).then(labelled(label, reasoned)).messages()

        answered = await ask_choice(self.ctx, gen, document.then(labelled(label, reasoning)).messages(),
                                    self.s.labels, document_method(self.s.choice), prefix=t["document_decision"],
                                    document=True, content_free=content_free,
                                    calibrated=calibrates(self.ctx, gen, self.s.calibration), stage=stage,
                                    round=round, decide=lambda text: self.labels.map(text)[0])
        self.measured = self.measured or answered.measured_read
        return reasoning, self.labels.map(answered.text)[0]

    async def discriminate_in_document(self, disc: str, reasoning: str, decision: Optional[str], stage: str,
                                       round: int, demos: Demos) -> tuple[str, tuple[str, Optional[str], str]]:
        """The discriminator's yes/no (most likely after `document_correct`); after a "no" its
        explanation turn and its own decision (most likely after `document_corrected`). The yes/no
        is not calibrated: it checks another answer, it is no label with a prior to correct (with a
        content-free input and reasoning the embedded model said yes, so calibrated it said no to
        every decision and no negotiation ever agreed)."""
        t, method = self.templates, document_method(self.s.choice)
        calibrated, docs = calibrates(self.ctx, disc, self.s.calibration), self.documents
        shown = docs.discriminator(self.item.text, reasoning, decision or "", demos)
        said = await ask_choice(self.ctx, disc, shown.messages(), ("yes", "no"), method, prefix=t["document_correct"],
                                document=True, stage=stage, round=round, decide=chosen_option)
        self.measured = self.measured or said.measured_read
        attitude = "yes" if chosen_option(said.text) == "yes" else "no"
        if attitude == "yes" and decision is not None:
            verdict: tuple[str, Optional[str], str] = (attitude, decision, "")
        else:
            judged = shown.then(f"{t['document_correct']} no.")
            why = await self._say(disc, "", judged, "explanation", stage, round)
            label = t["label_explanation"]

            def content_free(text: str) -> list[LLMMessage]:
                free = docs.discriminator(text, docs.free_turn("reasoning", text), decision or "", demos)
                return free.then(f"{t['document_correct']} no.",
                                 labelled(label, docs.free_turn("explanation", text))).messages()

            corrected = await ask_choice(self.ctx, disc, judged.then(labelled(label, why)).messages(), self.s.labels,
                                         method, prefix=t["document_corrected"], document=True,
                                         content_free=content_free, calibrated=calibrated, stage=stage, round=round,
                                         decide=lambda text: self.labels.map(text)[0])
            found = self.labels.map(corrected.text)[0]
            verdict = (attitude, None if found == UNPARSED else found, why)
        return json.dumps(dict(zip(("attitude", "decision", "explanation"), verdict))), verdict

    async def discriminator_verdict(self, disc: str, prompt: str, stage: str, decision: Optional[str],
                                    round: int) -> tuple[str, tuple[str, Optional[str], str]]:
        """(the turn's text in the negotiation, its (attitude, decision, explanation)), read by the
        scenario's `choice` (see the module docstring)."""
        method = method_for(self.ctx, disc, self.s.choice, "structured")
        output = None if method == "text" else self.verdict
        if method != "likelihood":
            reply = await self._ask(disc, prompt, stage, output, round=round, decide=self._attitude)
            return reply, self._verdict(reply)
        opening = '{"attitude": "'
        said = await ask_choice(self.ctx, disc, [UserMessage(content=prompt, source="user")], ("yes", "no"), method,
                                prefix=opening, sep="", reply_prefix=opening, stage=stage, round=round,
                                decide=chosen_option)
        self.measured = self.measured or said.measured_read
        attitude = "yes" if chosen_option(said.text) == "yes" else "no"
        verdict: tuple[str, Optional[str], str]
        if attitude == "yes" and decision is not None:
            verdict = (attitude, decision, "")
        else:
            _, found, why = self._verdict(await self._ask(disc, prompt, stage, self.verdict, round=round,
                                                          decide=self._attitude))
            verdict = (attitude, found, why)
        return json.dumps(dict(zip(("attitude", "decision", "explanation"), verdict))), verdict

    def read_how(self) -> str:
        return ", closed answers by likelihood" if self.measured else ""

    def _decision(self, text: str) -> Optional[str]:
        """The generator's decision by the shared rule (its "Decision: X" line); None if undecided."""
        found = self.labels.decide(text)
        return None if found == UNPARSED else found

    def _attitude(self, reply: str) -> str:
        """How a discriminator turn reads in a transcript: `yes, positive` / `no`."""
        attitude, decision, _ = self._verdict(reply)
        return f"{attitude}, {decision}" if decision else attitude

    def _verdict(self, reply: str) -> tuple[str, Optional[str], str]:
        """(attitude, decision, explanation) of a discriminator reply; an unreadable reply is "no"."""
        data = json_object(reply) or {}
        attitude = str(data.get("attitude", "")).strip().lower()
        decision = self.labels.exact(str(data["decision"])) if data.get("decision") is not None else None
        return ("yes" if attitude == "yes" else "no"), decision, str(data.get("explanation", reply)).strip()
