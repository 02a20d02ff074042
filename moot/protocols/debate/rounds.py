"""One debate unit run: R + 1 rounds of the agents' answers (each round's calls started together), then the vote."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Mapping, Sequence

from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage

from moot.agents.prompts import inset, render
from moot.contract.protocol import Outcome
from moot.kit import Asking, Question, Respond, Seat, StageAgent, UNPARSED, UnitContext, cancel_calls, spoken_of
from moot.protocols.debate.schema import DebateScenario, label_set
from moot.protocols.debate.vote import vote
from moot.protocols.items.choices import ask_choice, calibrates, method_for
from moot.protocols.items.document import ItemDocument, in_document, labelled, speak
from moot.protocols.items.labels import LabelSet
from moot.speaker_selection.debate import next_speaker


async def run(s: DebateScenario, ctx: UnitContext) -> Outcome:
    """One item: R + 1 rounds of answers, then the vote."""
    labels, plan = label_set(s), s.plan()
    fields = item_fields(s, ctx.inputs)
    debate = _Debate(s, ctx, fields, labels)
    agents = [StageAgent(name, debate.turn(name)) for name in plan.agents]
    try:
        said = await ctx.group_chat(agents, lambda thread: next_speaker(plan, [m.source for m in thread]),
                                    fields["text"], len(plan.order()))
    finally:
        debate.cancel()
    n = len(plan.agents)
    answers = [[turn.label for turn in turns.values()] for turns in debate.rounds(len(said) // n)]
    label, explanation, decided_by = vote(answers, s.tie)
    raw = next((m.to_text() for m, lab in zip(said[-n:], answers[-1]) if lab == label), None)
    return Outcome(label, explanation, raw if label != UNPARSED else None, decided_by=decided_by,
                   summary={"answers": answers})


def item_fields(s: DebateScenario, inputs: Mapping[str, object]) -> dict[str, str]:
    """The placeholders every prompt of the item shares; the question reads well with or without a target."""
    templates = s.templates()
    fields = {"text": str(inputs["text"]), "target": str(inputs.get("target") or ""),
              "options": ", ".join(s.labels), "agents": str(s.agents)}
    fields["question"] = render(templates["question_target" if fields["target"] else "question"], fields)
    return fields


@dataclass(frozen=True)
class Said:
    """An agent's turn in a round: its reply, and the label it came to (or unparsed)."""

    text: str
    label: str


class _Debate:
    """Each round's calls (started together at the round's first turn) and what they said; an
    agent's memory (its chat, or the document) is rebuilt from what the earlier rounds said."""

    def __init__(self, s: DebateScenario, ctx: UnitContext, fields: Mapping[str, str], labels: LabelSet):
        self.s, self.plan, self.ctx, self.fields, self.labels = s, s.plan(), ctx, dict(fields), labels
        self.templates = s.templates()
        self.calls: dict[int, dict[str, asyncio.Future[Said]]] = {}
        self.names = {a: render(self.templates["label_agent"], {"number": i})
                      for i, a in enumerate(self.plan.agents, 1)}

    def chat(self, agent: str, r: int, fields: Mapping[str, str], said: Sequence[Mapping[str, Said]]) -> list[LLMMessage]:
        """What `agent` is sent in round r in chat: its own chat so far (each earlier round's
        prompt and its reply), then this round's prompt."""
        messages: list[LLMMessage] = []
        for q in range(r + 1):
            messages.append(UserMessage(content=self.ask(agent, q, fields, said), source="user"))
            if q < r:
                messages.append(AssistantMessage(content=said[q][agent].text, source=agent))
        return messages

    def ask(self, agent: str, r: int, fields: Mapping[str, str], said: Sequence[Mapping[str, Said]]) -> str:
        """Round r's prompt: the question (round 0), the other agents' round r-1 answers (rounds
        >= 1), or a request to check itself (alone)."""
        if r == 0:
            return render(self.templates["answer"], fields)
        others = [said[r - 1][a].text for a in self.plan.agents if a != agent]
        if not others:
            return render(self.templates["reflect"], fields)
        solutions = "\n\n".join(render(self.templates["solution"], {"solution": inset(o.strip())}) for o in others)
        return render(self.templates["debate"], {**fields, "solutions": solutions})

    def document(self, r: int, fields: Mapping[str, str], said: Sequence[Mapping[str, Said]]) -> ItemDocument:
        """The document of rounds 0..r-1 (`said`), then round r's direction (document form)."""
        t = self.templates
        paragraphs = [render(t["document_header"], fields)]
        for number, turns in enumerate([*said, {}], 1):
            key = "document_round" if number == 1 else "document_debate" if len(self.plan.agents) > 1 else \
                "document_reflect"
            paragraphs.append(render(t[key], {**fields, "round": number}))
            for agent, turn in turns.items():
                paragraphs += [labelled(self.names[agent], turn.text), self.answer_line(agent, turn.label)]
        return ItemDocument(tuple(paragraphs), tuple(self.names.values()))

    def answer_line(self, agent: str, label: str = "") -> str:
        line = render(self.templates["document_answer"], {"agent": self.names[agent]})
        return f"{line} {label}." if label else line

    def start(self, r: int) -> None:
        self.calls[r] = {a: asyncio.ensure_future(self.answer(a, r)) for a in self.plan.agents}

    async def answer(self, agent: str, r: int) -> Said:
        """The agent's turn in round r and its label: a person's at its seat, or in the document (a
        base model) or in chat."""
        stage = "answer" if r == 0 else "debate"
        return await self.ctx.person_or_model(
            self.ctx.seat(agent), lambda seat: self.asking(agent, r, stage, seat), lambda: self.by_model(agent, r, stage),
            lambda said: Said(said.content, said.decision or UNPARSED), role=agent, stage=stage, round=r,
            content=lambda given: (given.get("text", ""), given.get("label", UNPARSED)))

    async def by_model(self, agent: str, r: int, stage: str) -> Said:
        """The agent's model's turn in round r and its label: in the document or in chat."""
        if in_document(self.ctx, agent):
            return await self.in_document(agent, r, stage)
        said = self.rounds(r)
        messages = self.chat(agent, r, self.fields, said)
        method = method_for(self.ctx, agent, self.s.choice, "text")
        reply = await self.ctx.call(agent, messages, stage=stage, round=r,
                                    decide=self.labels.decide if method == "text" else None)
        if method == "text":
            return Said(reply.text, self.labels.decide(reply.text))
        ask = UserMessage(content=render(self.templates["final_answer"], self.fields), source="user")

        def content_free(text: str) -> list[LLMMessage]:
            blank = [{a: Said(text, text) for a in turns} for turns in said]
            free = self.chat(agent, r, {**self.fields, "text": text}, blank)
            return [*free, AssistantMessage(content=text, source=agent), ask]

        answered = await ask_choice(self.ctx, agent, [*messages, AssistantMessage(content=reply.text, source=agent), ask],
                                    self.s.labels, method, stage=f"{stage}_answer", round=r, content_free=content_free,
                                    calibrated=calibrates(self.ctx, agent, self.s.calibration),
                                    decide=lambda text: self.labels.map(text)[0])
        return Said(reply.text, self.labels.map(answered.text)[0])

    def asking(self, agent: str, r: int, stage: str, seat: Seat) -> Asking:
        """A person's turn in round r (`--human agent_1`): shown what the agent's model would be
        (the question, the others' last answers), they write their answer and choose its label."""
        return Asking(seat.spec.name, agent, self.names[agent], f"round {r}", stage,
                      (Question("text", "Your answer, with your reasons"),
                       Question("label", "Your answer", tuple(self.s.labels))),
                      shown=self.ask(agent, r, self.fields, self.rounds(r)))

    async def in_document(self, agent: str, r: int, stage: str) -> Said:
        """A base model's turn: it continues the debate's document; its label is then read by
        likelihood from a short document of its own (the text, the question and its turn), so the
        same document around content-free inputs (calibration) is short, the same for every item
        on a target, and kept in the reply cache."""
        document = self.document(r, self.fields, self.rounds(r))
        name = self.names[agent]
        reply = await speak(self.ctx, agent, [], document, name, opening=render(self.templates["opening_answer"],
                                                                              self.fields), stage=stage, round=r)
        answered = await ask_choice(self.ctx, agent, self.answered(agent, self.fields, reply.text).messages(),
                                    self.s.labels, "likelihood", prefix=self.answer_line(agent), document=True,
                                    content_free=lambda text: self.answered(agent, {**self.fields, "text": text},
                                                                            text).messages(),
                                    calibrated=calibrates(self.ctx, agent, self.s.calibration),
                                    stage=f"{stage}_answer", round=r, decide=lambda text: self.labels.map(text)[0])
        return Said(reply.text, self.labels.map(answered.text)[0])

    def answered(self, agent: str, fields: Mapping[str, str], turn: str) -> ItemDocument:
        """The document an agent's label is read from: the text and the question, then its turn."""
        return ItemDocument((render(self.templates["document_answered"], fields), labelled(self.names[agent], turn)),
                            tuple(self.names.values()))

    def turn(self, agent: str) -> Respond:
        async def respond(thread: Sequence[BaseChatMessage]) -> str:
            r = self.plan.round_of(len(spoken_of(thread)))
            if r not in self.calls:
                self.start(r)
            return (await self.calls[r][agent]).text

        return respond

    def rounds(self, r: int) -> list[dict[str, Said]]:
        """What rounds 0..r-1 said (finished: the group chat took every turn of them)."""
        return [{a: self.calls[q][a].result() for a in self.plan.agents} for q in range(r)]

    def cancel(self) -> None:
        """Stop the calls still running (a turn failed); the failures of others are already known."""
        cancel_calls(call for calls in self.calls.values() for call in calls.values())
