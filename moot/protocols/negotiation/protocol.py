"""LLM negotiation for sentiment analysis (Sun et al.) — one text.

Demonstrations: the k nearest training items; each LLM writes the reasoning chain of a demo
as generator and the explanation of a demo as discriminator (cached, so shared across items).
A negotiation (a group chat of AutoGen agents, speaker_selection.negotiation): the generator reasons and
decides ("Decision: X", mapped by the shared rule of moot.protocols.items.labels: no decisive label
= no decision, never a default); the discriminator answers {attitude, explanation, decision}
(structured output). "yes" with the generator's decision as its decision is a consensus
(`agreed`); anything else returns its explanation to the generator, up to max_turns. The negotiation and the
role-flipped one run concurrently and combine by the paper's rules (`combine`); conflicting
decisions bring in the third LLM: four more negotiations and a six-way vote (`vote`).

The discriminator's yes/no is read by the scenario's `choice` (moot.protocols.items.choices). The
default is the paper's structured reply. With `likelihood` (`auto` on the embedded model) the
discriminator prompt is closed where its JSON answer begins, `{"attitude": "` (a last line in
document form; the reply's beginning, prefilled, on an instruction model), and " yes" / "no" are
scored as what follows; a "yes" agrees with the generator's decision, and only a "no" asks for the
structured reply, for its explanation (the attitude stays the measured "no"). With `text` the
same prompt is answered without a schema and parsed.

A person may take the generator's or the discriminator's seat in every negotiation (`moot run
--human generator`), or an LLM's (`first`, `second`, `third`: its turns in both roles; a role's
seat comes first): shown the prompt the model would be sent, the generator writes its reasoning and
chooses a decision; the discriminator says whether the generator's decision is right and, if not,
which is and why. The turns read as a model's would (consensus, the role-flipped negotiation, the
vote). The demonstrations stay the models' own.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, Mapping, Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage
from pydantic import BaseModel, create_model

from moot.agents.prompts import inset, render
from moot.kit import (
    ANY_STAGE, Asking, Expected, Message, Question, Seat, StageAgent, UNPARSED, UnitContext, iter_items, json_object, load_dataset_spec,
    expected, shown_of,
)
from moot.contract.protocol import InputField, Outcome, Protocol, Rescore, Rescored
from moot.protocols.items.choices import ask_choice, calibrates, chosen_option, document_method, method_for
from moot.protocols.items.document import ItemDocument, in_document, labelled, speak
from moot.protocols.negotiation.knn import NearestNeighbours
from moot.protocols.items.labels import LabelSet
from moot.protocols.negotiation.schema import NegotiationScenario
from moot.speaker_selection.conference import Turn
from moot.speaker_selection.negotiation import AGREE, NegotiationPlan, next_speaker

Demos = Sequence[Mapping[str, str]]  # each demonstration's fields (demo_fields)

GEN, DISC = "generator", "discriminator"


@dataclass(frozen=True)
class ItemInput:
    id: str
    text: str


@dataclass(frozen=True)
class Result:
    """One negotiation: who generated / discriminated, consensus or not, the decision."""

    generator: str
    discriminator: str
    consensus: bool
    decision: Optional[str]


def labels_of(s: NegotiationScenario) -> LabelSet:
    return LabelSet(tuple(s.labels), tuple(s.labels), {lab: lab for lab in s.labels}, dict(s.aliases))


def combine(a: Result, b: Result) -> tuple[Optional[str], bool]:
    """(decision, needs the third LLM) from a negotiation and its role-flipped twin."""
    if a.consensus and b.consensus:
        return (a.decision, False) if a.decision == b.decision else (None, True)
    if a.consensus or b.consensus:
        return (a.decision if a.consensus else b.decision), False
    return None, True


def vote(results: Sequence[Result]) -> Optional[str]:
    """Most frequent decision of the negotiations; a tie goes to the earliest of the tied."""
    decisions = [r.decision for r in results if r.decision is not None]
    if not decisions:
        return None
    counts = Counter(decisions)
    best = max(counts.values())
    return next(d for d in decisions if counts[d] == best)


class _Verdict(BaseModel):
    attitude: Literal["yes", "no"]
    explanation: str = ""


@lru_cache(maxsize=16)
def verdict_model(labels: tuple[str, ...]) -> type[BaseModel]:
    return create_model("DiscriminatorVerdict", __base__=_Verdict,
                        decision=(Literal[labels], ...))  # type: ignore[arg-type]  # a Literal made at run time


@lru_cache(maxsize=8)
def _train(path: str) -> tuple[list[tuple[str, str]], NearestNeighbours]:
    rows = [(i.text, i.label) for i in iter_items(load_dataset_spec(path)) if i.label]
    return rows, NearestNeighbours([t for t, _ in rows])


def neighbours(s: NegotiationScenario, text: str) -> list[tuple[str, str]]:
    """The k nearest training items (text, label); `prepare` made the train path absolute."""
    if not s.demonstrations.train or not s.demonstrations.k:
        return []
    rows, index = _train(s.demonstrations.train)
    return [rows[i] for i in index.query(text, s.demonstrations.k)]


class _Negotiator:
    """Everything one item's negotiations share: prompts, demos per LLM, the context."""

    def __init__(self, s: NegotiationScenario, ctx: UnitContext, item: ItemInput, demos: list[tuple[str, str]]):
        self.s, self.ctx, self.item, self.demos = s, ctx, item, demos
        self.templates, self.labels = s.templates(), labels_of(s)
        self.options = ", ".join(s.labels)
        self.verdict = verdict_model(tuple(s.labels))
        t = self.templates
        self.called = tuple(dict.fromkeys([t["label_reasoning"], t["label_explanation"], "Input", "Decision",
                                           "Correct"]))
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

    def free_turn(self, who: str, text: str) -> str:
        """A content-free `who` turn (calibration): its opening words, which are the template's, not
        the item's, then the content-free text."""
        return f"{' '.join(self.templates[f'opening_{who}'].split())} {text}".strip()

    def _document(self, *paragraphs: str) -> ItemDocument:
        return ItemDocument(tuple(paragraphs), self.called)

    async def demo_fields(self, gen: str, disc: str) -> list[dict[str, str]]:
        """Each demonstration (input, decision) with the generator's reasoning chain for it and
        the discriminator's explanation of it."""
        t = self.templates

        async def one(text: str, decision: str) -> dict[str, str]:
            fields = {"text": text, "decision": decision}
            chain = await self._say(gen, render(t["demo_reasoning"], fields),
                                    self._document(render(t["document_demo_input"], fields)), "reasoning",
                                    "demo_reasoning")
            fields["reasoning"] = inset(chain.strip())
            why = await self._say(disc, render(t["demo_explanation"], fields),
                                  self._document(render(t["document_decided"], fields), f"{t['document_correct']} yes."),
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
                self.seat_of(GEN, gen), lambda seat: self.generator_asking(seat, gen, stage, round, history),
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
                self.seat_of(DISC, disc), lambda seat: self.discriminator_asking(seat, disc, stage, round, prompt,
                                                                                 decision),
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

    # ------------------------------------------------------------------ a person's turns
    def seat_of(self, role: str, llm: str) -> Optional[Seat]:
        """The seat a person takes in this turn: the role's, else the LLM's."""
        return self.ctx.seat(role) or self.ctx.seat(llm)

    def generator_asking(self, seat: Seat, gen: str, stage: str, round: int, history: Sequence[LLMMessage]) -> Asking:
        return Asking(seat.spec.name, gen, f"{gen} (generator)", f"{stage} R{round}", stage,
                      (Question("text", "Your reasoning"), Question("decision", "Your decision", tuple(self.s.labels))),
                      shown=shown_of(history))

    def discriminator_asking(self, seat: Seat, disc: str, stage: str, round: int, prompt: str,
                             decision: Optional[str]) -> Asking:
        return Asking(seat.spec.name, disc, f"{disc} (discriminator)", f"{stage} R{round}", stage,
                      (Question("attitude", f"Is the generator's decision ({decision or 'none'}) right?", (AGREE, "no")),
                       Question("decision", "The right decision", tuple(self.s.labels), asked_if=("attitude", "no")),
                       Question("explanation", "Why (the generator reads it)", asked_if=("attitude", "no"))),
                      shown=prompt)

    # ------------------------------------------------------------------ a base model's turns
    def generator_document(self, text: str, turns: Sequence[tuple[str, str, str]], demos: Demos) -> ItemDocument:
        """The generator's document: the task, its demonstrations, the input, then each earlier
        turn (reasoning, decision) and the discriminator's explanation of why it was wrong."""
        t = self.templates
        paragraphs = [render(t["document_header"], {"options": self.options}),
                      *(render(t["document_demo"], d) for d in demos), render(t["document_input"], {"text": text})]
        for reasoning, decision, explanation in turns:
            paragraphs += [labelled(t["label_reasoning"], reasoning), f"{t['document_decision']} {decision}.",
                           render(t["document_disagree"], {"explanation": inset(explanation)})]
        return self._document(*paragraphs)

    async def generate_in_document(self, gen: str, stage: str, round: int, turns: Sequence[tuple[str, str, str]],
                                   demos: Demos) -> tuple[str, str]:
        """The generator's reasoning turn, then its decision: the label most likely after
        `document_decision` (calibrated: the input, reasonings and explanations content-free)."""
        t = self.templates
        document = self.generator_document(self.item.text, turns, demos)
        reasoning = await self._say(gen, "", document, "reasoning", stage, round)
        label = t["label_reasoning"]

        def content_free(text: str) -> list[LLMMessage]:
            reasoned, explained = self.free_turn("reasoning", text), self.free_turn("explanation", text)
            blank = [(reasoned, d, explained) for _, d, _ in turns]
            return self.generator_document(text, blank, demos).then(labelled(label, reasoned)).messages()

        answered = await ask_choice(self.ctx, gen, document.then(labelled(label, reasoning)).messages(),
                                    self.s.labels, document_method(self.s.choice), prefix=t["document_decision"],
                                    document=True, content_free=content_free,
                                    calibrated=calibrates(self.ctx, gen, self.s.calibration), stage=stage,
                                    round=round, decide=lambda text: self.labels.map(text)[0])
        self.measured = self.measured or answered.measured_read
        return reasoning, self.labels.map(answered.text)[0]

    def discriminator_document(self, text: str, reasoning: str, decision: str, demos: Demos) -> ItemDocument:
        t = self.templates
        return self._document(render(t["document_discriminator_header"], {"options": self.options}),
                              *(render(t["document_discriminator_demo"], d) for d in demos),
                              render(t["document_decided"], {"text": text, "reasoning": inset(reasoning),
                                                             "decision": decision}))

    async def discriminate_in_document(self, disc: str, reasoning: str, decision: Optional[str], stage: str,
                                       round: int, demos: Demos) -> tuple[str, tuple[str, Optional[str], str]]:
        """The discriminator's yes/no (most likely after `document_correct`); after a "no" its
        explanation turn and its own decision (most likely after `document_corrected`). The yes/no
        is not calibrated: it checks another answer, it is no label with a prior to correct (with a
        content-free input and reasoning the embedded model said yes, so calibrated it said no to
        every decision and no negotiation ever agreed)."""
        t, method = self.templates, document_method(self.s.choice)
        calibrated = calibrates(self.ctx, disc, self.s.calibration)
        shown = self.discriminator_document(self.item.text, reasoning, decision or "", demos)
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
                free = self.discriminator_document(text, self.free_turn("reasoning", text), decision or "", demos)
                return free.then(f"{t['document_correct']} no.",
                                 labelled(label, self.free_turn("explanation", text))).messages()

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


DECISION = "\nDecision: "


def generated(given: Mapping[str, str]) -> tuple[str, Optional[str]]:
    """A person's generator turn as the model's would read: the reasoning, then `Decision: X`."""
    if not given:
        return "", None
    return f"{given.get('text', '')}{DECISION}{given['decision']}", given["decision"]


def discriminated(given: Mapping[str, str], decision: Optional[str]) -> str:
    """A person's discriminator turn as the model's structured reply: "yes" holds the generator's
    decision; a skipped turn is none (it reads as "no")."""
    if not given:
        return ""
    agrees = given["attitude"] == AGREE
    return json.dumps({"attitude": given["attitude"], "decision": decision if agrees else given.get("decision"),
                       "explanation": given.get("explanation", "")}, ensure_ascii=False)


def agreed(generated: Optional[str], verdict: tuple[str, Optional[str], str]) -> bool:
    """A consensus (Sun et al.): the discriminator's attitude is "yes" and its structured
    decision is the generator's decision. A generator reply without a decisive label (None)
    cannot be agreed with, and a "yes" whose decision differs from the generator's contradicts
    itself: neither is a consensus, and the negotiation goes on (the generator gets the
    explanation) until max_turns. The agreed decision is the negotiation's result."""
    attitude, decision, _ = verdict
    return attitude == AGREE and generated is not None and decision == generated


async def run(s: NegotiationScenario, ctx: UnitContext) -> Outcome:
    """One text: a negotiation, its role-flipped twin, and the third LLM's vote on a conflict."""
    return await run_item(s, ctx, ItemInput(ctx.unit.id, ctx.inputs["text"]))


PAIRS = (("first", "second"), ("second", "first"))
THIRD_PAIRS = (("third", "first"), ("first", "third"), ("third", "second"), ("second", "third"))
NO_CONSENSUS = "no consensus"


async def run_item(s: NegotiationScenario, ctx: UnitContext, item: ItemInput) -> Outcome:
    n = _Negotiator(s, ctx, item, neighbours(s, item.text))
    pair = await asyncio.gather(*(n.negotiate(g, d) for g, d in PAIRS))
    decision, conflict = combine(*pair)
    if conflict and "third" in s.models:
        return await third_vote(n, list(pair))
    how = ("conflict between the negotiations and no third LLM" if conflict
           else "negotiation and role-flipped negotiation")
    return outcome_of(decision, how + n.read_how(), list(pair))


async def third_vote(n: "_Negotiator", pair: list[Result]) -> Outcome:
    """The third LLM's four negotiations, then the six-way vote."""
    results = pair + list(await asyncio.gather(*(n.negotiate(g, d) for g, d in THIRD_PAIRS)))
    return outcome_of(vote(results), "six-way vote with the third LLM" + n.read_how(), results)


def outcome_of(decision: Optional[str], how: str, results: Sequence[Result]) -> Outcome:
    summary = summary_of(results)
    return Outcome(decision or UNPARSED, f"{how} ({summary})", summary, decided_by=how)


def summary_of(results: Sequence[Result]) -> str:
    """`first->second: positive; second->first: no consensus; ...` (an outcome's `raw`)."""
    return "; ".join(f"{r.generator}->{r.discriminator}: {r.decision if r.consensus else NO_CONSENSUS}"
                     for r in results)


def results_of(summary: str) -> list[Result]:
    """The negotiations a recorded summary names (the inverse of summary_of)."""
    found = []
    for part in filter(None, (p.strip() for p in (summary or "").split(";"))):
        pair, _, decision = part.partition(": ")
        gen, _, disc = pair.partition("->")
        agreed = decision != NO_CONSENSUS
        found.append(Result(gen, disc, agreed, decision if agreed else None))
    return found


async def rescore(s: NegotiationScenario, job: Rescore, ctx: UnitContext) -> Rescored:
    """The third LLM's vote again, with another model as the third LLM: on an item whose
    negotiation and role-flipped negotiation conflict (with `every`: on every item) its four
    negotiations run anew and the six-way vote decides. The first two negotiations are read from
    the recorded outcome, never re-run; calls the transcript already holds (demonstrations of the
    first and second LLM) are served from it."""
    recorded = job.transcript.outcome
    pair = [r for r in results_of(recorded.raw or "" if recorded else "") if (r.generator, r.discriminator) in PAIRS]
    if len(pair) != 2:
        raise ValueError("the recorded outcome does not name both negotiations (first->second, second->first)")
    _, conflict = combine(*pair)
    if not conflict and not job.every:
        return Rescored()
    text = job.transcript.started.inputs.get("text", "")
    n = _Negotiator(s, ctx, ItemInput(ctx.unit.id, text), neighbours(s, text))
    return Rescored(await third_vote(n, pair))


def scripted(s: NegotiationScenario) -> dict[str, Expected]:
    """A scripted generator's turn ends with its "Decision: <label>" (a discriminator's verdict is
    closed: structured, or yes / no)."""
    return {ANY_STAGE: expected("(scripted) I read the input step by step.\nDecision: {label}", label=s.labels)}


PROTOCOL = Protocol(
    name="negotiation",
    title="LLM negotiation for sentiment analysis",
    paper="Sun et al. 2023, Sentiment Analysis through LLM Negotiations",
    scenario=NegotiationScenario,
    policy=next_speaker,
    run=run,
    inputs=(InputField("text", "text", help="the text whose sentiment is judged"),),
    result_name="sentiment",
    deciders=("third",),
    rescore=rescore,
    example="negotiation",
    seats=lambda s: {GEN: (GEN,), DISC: (DISC,), **{llm: (llm,) for llm in s.roles()}},
    scripted=scripted,
)
