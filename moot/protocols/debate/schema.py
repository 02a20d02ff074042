"""The debate scenario (`protocol: debate`): the agents, their rounds, the label set, how a tie is settled."""

from __future__ import annotations

from typing import Annotated, Literal, Mapping, Optional

from pydantic import Field, model_validator

from moot.kit import (
    Backends, CalibrationSetting, ChoiceSetting, Generation, RUMOR_CLASSES, Retry, Strict, check_models, check_prompts,
    class_for, fail,
)
from moot.protocols.items.schema import (MAX_UNPARSED, LabelledScenario, Labels, MaxUnparsed, TurnTokens, check_aliases,
                                         check_distinct)
from moot.protocols.items.labels import LabelSet
from moot.speaker_selection.debate import DebatePlan

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
