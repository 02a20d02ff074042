"""Multi-agent debate (Du et al. 2023, "Improving Factuality and Reasoning in Language Models
through Multiagent Debate") for one labelled item — the common baseline for COLA and S2MAD.

1. Round 0: N agents answer the question about the text independently.
2. Rounds 1..R: each agent is shown the other agents' previous answers (its own is already in
   its memory: every agent is a chat with its own history, as in the paper) and may revise.
   The turns are taken in agent order by a group chat of AutoGen agents (speaker_selection.debate); a
   round's N calls start together at its first turn, since none depends on another.
3. Every answer is mapped onto a label by the shared rule (LabelSet.decide: unambiguous, else
   unparsed). The final label is the plurality of the last round's parsed answers; unparsed
   answers do not vote. A tie follows `tie:` (see `vote`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Annotated, Literal, Mapping, Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage
from pydantic import Field, model_validator

from moot.agents.prompts import inset, render
from moot.kit import (
    ANY_STAGE, Asking, Expected, Backends, CalibrationSetting, ChoiceSetting, Generation, Question, RUMOR_CLASSES, Respond, Retry, Seat,
    StageAgent, Strict, UNPARSED, UnitContext, cancel_calls, check_models, check_prompts, class_for, expected, fail,
    spoken_of,
)
from moot.contract.protocol import InputField, Outcome, Protocol
from moot.protocols.items.schema import (MAX_UNPARSED, LabelledScenario, Labels, MaxUnparsed, TurnTokens, check_aliases,
                                         check_distinct)
from moot.protocols.items.choices import ask_choice, calibrates, method_for
from moot.protocols.items.document import ItemDocument, in_document, labelled, speak
from moot.protocols.items.labels import LabelSet
from moot.protocols.items.metrics import RUMOUR_METRICS, answers_of
from moot.speaker_selection.debate import DebatePlan, next_speaker

TEMPLATE_FIELDS = frozenset({"text", "target", "question", "options", "solution", "solutions", "agents", "round",
                             "agent", "number"})
Tie = Literal["unparsed", "first_agent", "previous_rounds"]


class DebateInputs(Strict):
    """One item given in the file (`--input text=... --input target=...` override it)."""

    text: Optional[str] = None
    target: Optional[str] = None


class DebateScenario(LabelledScenario):
    """Multi-agent debate (Du et al.): N agents, R rounds of reading each other, a vote."""

    PROTOCOL = "debate"
    PLACEHOLDERS = TEMPLATE_FIELDS

    protocol: Literal["debate"]
    title: str = "Multi-agent debate"
    """Shown in transcripts and reports."""
    input: DebateInputs = DebateInputs()
    labels: Labels = ["favor", "against", "neutral"]
    """The closed label set every agent answers from (stance, rumour or sentiment labels)."""
    aliases: dict[str, str] = {}
    """Other answers that map onto a label (e.g. `pro: favor`); an answer that maps to none is
    `unparsed` and does not vote."""
    metric: Optional[Literal["f_avg", "macro_f1", "accuracy", "rf1", "nf1"]] = None
    """The headline metric of a dataset run; null: the dataset's declared metric, else macro-F1."""
    max_unparsed: MaxUnparsed = MAX_UNPARSED
    agents: Annotated[int, Field(ge=1, le=16)] = 3
    """How many agents debate (Du et al. use 3); one agent reflects on its own answer instead."""
    rounds: Annotated[int, Field(ge=0, le=10)] = 2
    """Rounds of reading the others' answers after the independent first answers (Du et al.: 2);
    0 = independent answers and a vote."""
    choice: ChoiceSetting = "auto"
    """How each agent's label is read: `text` (Du et al.'s: its reply's "Answer: <label>", parsed),
    `likelihood` (the reply is followed by the question `final_answer` and the model's most likely
    label; a backend without log-probabilities falls back to `structured`), `structured`
    (`{"answer": label}`); `auto`: likelihood on the embedded model, else text. On a base model
    the label is read by likelihood after the agent's turn in the document."""
    calibration: CalibrationSetting = "auto"
    """How a likelihood answer is calibrated: `contextual` (Zhao et al. 2021: each label's
    probability divided by the one the same prompt gives when the text and the replies in it are
    "N/A", "[MASK]" or empty; every answer records raw, content-free and calibrated
    probabilities), `none`; `auto`: contextual on the embedded model."""
    tie: Tie = "unparsed"
    """When the vote of the last round is tied: `unparsed` (claim no label), `first_agent` (the
    lowest-numbered agent's label among the tied, as Du et al.'s code), `previous_rounds` (the
    latest earlier round that separates the tied labels)."""
    models: dict[str, str] = {"default": "local"}
    """Which model plays whom. Keys: `default`, `agents` (every agent), `agent_1` ... `agent_N`."""
    turn_tokens: TurnTokens = 48
    generation: Generation = Generation(temperature=1.0, max_tokens=512)
    retry: Retry = Retry()
    backends: Backends = Backends()
    prompts: dict[str, str] = {}

    @model_validator(mode="after")
    def _consistent(self) -> "DebateScenario":
        check_distinct(self.labels, "labels")
        check_aliases(self.aliases, self.labels)
        check_models(self.models, ("default", "agents", *self.roles()))
        check_prompts(self.prompts, "debate", TEMPLATE_FIELDS)
        if self.metric == "f_avg" and not {"favor", "against"} <= set(self.labels):
            raise fail("f_avg needs the labels 'favor' and 'against'", "metric")
        if self.metric in RUMOR_CLASSES and class_for(self.metric, self.labels) is None:
            raise fail(f"{self.metric} needs one of the labels {', '.join(RUMOR_CLASSES[self.metric])}", "metric")
        if self.generation.seed is None:
            raise fail("must be set: agent i samples with seed + i - 1, so the agents differ and a rerun "
                       "is served from the cache", "generation", "seed")
        return self

    def roles(self) -> list[str]:
        return [f"agent_{i}" for i in range(1, self.agents + 1)]

    def model_keys(self, role: str) -> tuple[str, ...]:
        """models[agent_i] > models['agents'] > models['default'] > local."""
        return (role, "agents")

    def generation_for(self, role: str) -> Generation:
        """Agent i samples with seed + i - 1: same settings otherwise, different draws."""
        offset = self.roles().index(role)
        seed = self.generation.seed
        return self.generation.model_copy(update={"seed": None if seed is None else seed + offset})

    def check_models(self, resolved: Mapping[str, str]) -> None:
        if self.agents > 1 and self.generation.temperature == 0 and len(set(resolved.values())) == 1:
            raise ValueError("with temperature 0 and one model, every agent gives the same answer and the "
                             "debate changes nothing; raise generation.temperature or give agents other models")

    def headline_metric(self) -> str:
        return self.metric or "macro_f1"

    def plan(self) -> DebatePlan:
        return DebatePlan(tuple(self.roles()), self.rounds)


def label_set(s: DebateScenario) -> LabelSet:
    return LabelSet(tuple(s.labels), tuple(s.labels), aliases=dict(s.aliases))


def vote(answers: Sequence[Sequence[str]], tie: Tie) -> tuple[str, str, str]:
    """(label, explanation, decided_by) from each round's labels, in agent order.

    The label most agents gave in the last round wins; `unparsed` answers do not vote, and no
    parsed answer at all is `unparsed`. A tie between labels is settled by `tie`:
    `unparsed` (no label is claimed), `first_agent` (the tied label the lowest-numbered agent
    gave: Du et al.'s code), or `previous_rounds` (the tied label with most votes in the latest
    earlier round that separates them; still tied after round 0: unparsed).
    """
    last, r = answers[-1], len(answers) - 1
    said = f"after round {r}: {', '.join(last)}"
    counts = Counter(lab for lab in last if lab != UNPARSED)
    if not counts:
        return UNPARSED, f"no parseable answer {said}", "no_answer"
    top = max(counts.values())
    tied = [lab for lab in dict.fromkeys(last) if counts.get(lab) == top]  # first given first
    if len(tied) == 1:
        kind = "majority" if 2 * top > len(last) else "plurality"
        return tied[0], f"{kind} {top} of {len(last)} {said}", kind
    split = f"tie {'-'.join(str(top) for _ in tied)} between {', '.join(tied)} {said}"
    if tie == "first_agent":
        return tied[0], f"{split}; the first agent's: {tied[0]}", "tie_first_agent"
    if tie == "previous_rounds":
        for earlier in range(r - 1, -1, -1):
            before = Counter(lab for lab in answers[earlier] if lab in tied).most_common()
            if before and (len(before) == 1 or before[0][1] > before[1][1]):
                return before[0][0], f"{split}; round {earlier} favoured {before[0][0]}", "tie_previous_rounds"
    return UNPARSED, f"{split}; no label claimed (tie: {tie})", "tie"


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


def scripted(s: DebateScenario) -> dict[str, Expected]:
    """A scripted agent's turn ends as Du et al.'s prompt asks, "Answer: <label>"."""
    return {ANY_STAGE: expected("(scripted) I weighed the text against the question.\nAnswer: {label}", label=s.labels)}


PROTOCOL = Protocol(
    name="debate",
    title="Multi-agent debate",
    paper="Du et al. 2023, Improving Factuality and Reasoning in Language Models through Multiagent Debate",
    scenario=DebateScenario,
    policy=next_speaker,
    run=run,
    inputs=(InputField("text", "text", help="the text the question is about (a post, a claim, a sentence)"),
            InputField("target", "target", required=False, help="what the stance is towards, if any")),
    result_name="answer",
    example="debate",
    metrics=RUMOUR_METRICS,
    calls=lambda s: float(s.agents * (s.rounds + 1)),
    rounds=lambda row: answers_of(row),
    seats=lambda s: {**{a: (a,) for a in s.roles()}, "agents": tuple(s.roles())},
    scripted=scripted,
)
