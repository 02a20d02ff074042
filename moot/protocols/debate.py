"""Multi-agent debate (Du et al. 2023, "Improving Factuality and Reasoning in Language Models
through Multiagent Debate") for one labelled item — the common baseline for COLA and S2MAD.

1. Round 0: N agents answer the question about the text independently.
2. Rounds 1..R: each agent is shown the other agents' previous answers (its own is already in
   its memory: every agent is a chat with its own history, as in the paper) and may revise.
   The turns are taken in agent order by an AutoGen group chat (speaker_selection.debate); a
   round's N calls start together at its first turn, since none depends on another.
3. Every answer is mapped onto a label by the shared rule (LabelSet.decide: unambiguous, else
   unparsed). The final label is the plurality of the last round's parsed answers; unparsed
   answers do not vote. A tie follows `tie:` (see `vote`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Annotated, Literal, Mapping, Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage
from pydantic import Field, model_validator

from moot.agents.prompts import render
from moot.engine.stage import StageAgent, cancel_calls, spoken_of
from moot.metrics.classification import RUMOR_CLASSES, UNPARSED, class_for
from moot.contract.protocol import InputField, Outcome, Protocol
from moot.protocols.items.schema import ItemScenario, Labels, check_aliases, check_distinct
from moot.protocols.items.labels import LabelSet
from moot.protocols.items.metrics import RUMOUR_METRICS
from moot.engine.context import UnitContext
from moot.scenario.blocks import Backends, Generation, Retry, Strict, check_models, check_prompts, fail
from moot.speaker_selection.debate import DebatePlan, next_speaker

TEMPLATE_FIELDS = frozenset({"text", "target", "question", "options", "solution", "solutions"})
Tie = Literal["unparsed", "first_agent", "previous_rounds"]


class DebateInputs(Strict):
    """One item given in the file (`--input text=... --input target=...` override it)."""

    text: Optional[str] = None
    target: Optional[str] = None


class DebateScenario(ItemScenario):
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
    agents: Annotated[int, Field(ge=1, le=16)] = 3
    """How many agents debate (Du et al. use 3); one agent reflects on its own answer instead."""
    rounds: Annotated[int, Field(ge=0, le=10)] = 2
    """Rounds of reading the others' answers after the independent first answers (Du et al.: 2);
    0 = independent answers and a vote."""
    tie: Tie = "unparsed"
    """When the vote of the last round is tied: `unparsed` (claim no label), `first_agent` (the
    lowest-numbered agent's label among the tied, as Du et al.'s code), `previous_rounds` (the
    latest earlier round that separates the tied labels)."""
    models: dict[str, str] = {"default": "local"}
    """Which model plays whom. Keys: `default`, `agents` (every agent), `agent_1` ... `agent_N`."""
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
        return self.generation.model_copy(update={"seed": self.generation.seed + offset})

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
    debate = _Debate(s, ctx, fields, labels.decide)
    agents = [StageAgent(name, debate.turn(name)) for name in plan.agents]
    try:
        said = await ctx.group_chat(agents, lambda thread: next_speaker(plan, [m.source for m in thread]),
                                    fields["text"], len(plan.order()))
    finally:
        debate.cancel()
    n = len(plan.agents)
    answers = [[labels.decide(m.content) for m in said[i:i + n]] for i in range(0, len(said), n)]
    label, explanation, decided_by = vote(answers, s.tie)
    raw = next((m.content for m, lab in zip(said[-n:], answers[-1]) if lab == label), None)
    return Outcome(label, explanation, raw if label != UNPARSED else None, decided_by=decided_by,
                   summary={"answers": answers})


def answers_of(row: Mapping[str, object]) -> Optional[list[list[Optional[str]]]]:
    """Each round's answers as its results row records them (`answers`); unparsed is None."""
    found = row.get("answers")
    if not isinstance(found, list) or not all(isinstance(r, list) for r in found):
        return None
    return [[None if a in (None, UNPARSED) else str(a) for a in r] for r in found]


def item_fields(s: DebateScenario, inputs: Mapping[str, object]) -> dict[str, str]:
    """The placeholders every prompt of the item shares; the question reads well with or without a target."""
    templates = s.templates()
    fields = {"text": str(inputs["text"]), "target": str(inputs.get("target") or ""),
              "options": ", ".join(s.labels)}
    fields["question"] = render(templates["question_target" if fields["target"] else "question"], fields)
    return fields


class _Debate:
    """The agents' memories and each round's calls (started together at the round's first turn)."""

    def __init__(self, s: DebateScenario, ctx: UnitContext, fields: Mapping[str, str], decide):
        self.plan, self.ctx, self.fields, self.decide = s.plan(), ctx, fields, decide
        self.templates = s.templates()
        self.memory: dict[str, list[LLMMessage]] = {a: [] for a in self.plan.agents}
        self.calls: dict[int, dict[str, tuple[list[LLMMessage], asyncio.Future]]] = {}

    def shown(self, agent: str, r: int, previous: Mapping[str, str]) -> list[LLMMessage]:
        """What `agent` sees in round r: its own chat so far, then the question (round 0), the
        other agents' round r-1 answers (rounds >= 1), or a request to check itself (alone)."""
        others = [previous[a] for a in self.plan.agents if a != agent and a in previous]
        if r == 0:
            ask = render(self.templates["answer"], self.fields)
        elif others:
            solutions = "\n\n".join(render(self.templates["solution"], {"solution": o.strip()}) for o in others)
            ask = render(self.templates["debate"], {**self.fields, "solutions": solutions})
        else:
            ask = render(self.templates["reflect"], self.fields)
        return [*self.memory[agent], UserMessage(content=ask, source="user")]

    def start(self, r: int, previous: Mapping[str, str]) -> None:
        stage = "answer" if r == 0 else "debate"
        self.calls[r] = {}
        for agent in self.plan.agents:
            messages = self.shown(agent, r, previous)
            call = self.ctx.call(agent, messages, stage=stage, round=r, decide=self.decide)
            self.calls[r][agent] = (messages, asyncio.ensure_future(call))

    def turn(self, agent: str):
        async def respond(thread: Sequence[BaseChatMessage]) -> str:
            said = spoken_of(thread)
            r = self.plan.round_of(len(said))
            if r not in self.calls:
                n = len(self.plan.agents)
                self.start(r, {m.source: m.content for m in said[-n:]} if r else {})
            messages, call = self.calls[r][agent]
            text = (await call).text
            self.memory[agent] = [*messages, AssistantMessage(content=text, source=agent)]
            return text

        return respond

    def cancel(self) -> None:
        """Stop the calls still running (a turn failed); the failures of others are already known."""
        cancel_calls(call for calls in self.calls.values() for _, call in calls.values())


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
)
