"""The S2MAD scenario (`protocol: s2mad`): stance separation, subjectivity, debate, judge.

Ablations of the paper's Table 2 are data: `stance_separation: false` (up to forty random
comments in two halves), `subjectivity: subjective | objective` (one initial-opinion prompt for
every claim), `debate: false` (one agent reasons over the comments); a rounds sweep is
`rounds: 1..M`; early detection (Fig. 3) is `early:`; Table 1's vanilla baseline is
`baseline: vanilla`.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field, model_validator

from moot.protocols.items.schema import (MAX_UNPARSED, LabelledScenario, Labels, MaxUnparsed, TurnTokens, check_aliases,
                                         check_distinct)
from moot.kit import (
    Backends, CalibrationSetting, ChoiceSetting, Generation, Retry, Strict, check_models, check_prompts, fail,
)

ROLES = ("scorer", "classifier", "debater_p", "debater_n", "judge", "agent")
TEMPLATE_FIELDS = frozenset({"claim", "comment", "comments", "other", "reply_p", "reply_n", "options", "agent",
                             "round"})
DEFAULT_ALIASES = {"false": "fake", "true": "real", "rumor": "fake", "rumour": "fake",
                   "non-rumor": "real", "non-rumour": "real"}


class Early(Strict):
    """Early detection (Fig. 3): the comments posted up to a checkpoint. When set, comments are
    ordered by posting time (their `time`; those without one come last, in file order)."""

    first_n: Optional[Annotated[int, Field(ge=1)]] = None
    """Use only the first n comments posted (a checkpoint by post count, as Fig. 3)."""
    before_s: Optional[Annotated[float, Field(ge=0)]] = None
    """Use only the comments posted before this many seconds (comments without a time are left out)."""


class S2madInputs(Strict):
    """The item of a single run (no `--dataset`); `--input claim=...` and repeated
    `--input comment=...` override it."""

    claim: Optional[str] = None
    comments: list[str] = []


class S2madScenario(LabelledScenario):
    """Rumor detection (Zhang et al.): every comment is scored for or against the claim, the top-`k`
    of each side brief two debaters (with the subjective or the objective prompt), who debate for
    `rounds` rounds; agreement, else the judge, gives the label. The ablations of the paper's
    Table 2 and the rounds sweep are plain data."""

    PROTOCOL = "s2mad"
    PLACEHOLDERS = TEMPLATE_FIELDS

    protocol: Literal["s2mad"]
    title: str = "S2MAD rumor detection"
    """Shown in transcripts and reports."""
    input: S2madInputs = S2madInputs()
    labels: Labels = ["fake", "real"]
    """The closed label set."""
    aliases: dict[str, str] = {}
    """Other answers that map onto a label; built in: false/rumor/rumour → fake,
    true/non-rumor/non-rumour → real (when those labels exist)."""
    metric: Optional[Literal["macro_f1", "accuracy"]] = None
    """The headline metric of a dataset run; null: `macro_f1`."""
    k: Annotated[int, Field(ge=1, le=1000)] = 5
    """How many top supporting and top opposing comments brief the debaters."""
    rounds: Annotated[int, Field(ge=0, le=20)] = 2
    """Debate rounds (M). `0`: the two initial opinions decide (consensus, else the judge), moot's
    variant; the paper's w/o Debate is `debate: false`."""
    debate: bool = True
    """`false` is the w/o Debate ablation (Table 2): one agent (role `agent`) reasons over both
    stance sets with the initial-opinion prompt, and its answer is the label; no debaters, no judge."""
    stance_separation: bool = True
    """`false` is the w/o Stance ablation (Table 2): no scoring; up to `random_comments` comments
    sampled at random are split into two equal parts (with an odd count `debater_n` gets one more)."""
    random_comments: Annotated[int, Field(ge=1, le=1000)] = 40
    """How many comments are sampled at random without stance separation and for the vanilla
    baseline (the paper: forty)."""
    baseline: Optional[Literal["vanilla"]] = None
    """`vanilla` is Table 1's baseline instead of S2MAD: one LLM (role `agent`) is given the claim
    and `random_comments` random comments (needs `stance_separation: false`, `debate: false`)."""
    subjectivity: Literal["auto", "subjective", "objective"] = "auto"
    """`auto` classifies the claim and picks the matching initial-opinion prompt; the others use
    one prompt for every claim (ablations)."""
    early: Early = Early()
    choice: ChoiceSetting = "auto"
    """How closed answers are read (the classifier's Yes/No; the label of each debater, the judge
    and the agent): `text` (the paper's: parsed from the reply); `likelihood` (the Yes/No scored
    directly; after a reasoning reply its closing question, template `answer`, asked on its own
    and each option scored; falls back to `structured` without log-probabilities); `structured`
    (the same questions, constrained `{"answer": ...}`); `auto`: likelihood on the embedded
    model, else text."""
    calibration: CalibrationSetting = "auto"
    """How likelihood answers are calibrated: `contextual` (Zhao et al. 2021: each option's
    probability divided by the one the same prompt gives when the post, its replies and the
    agents' replies are "N/A", "[MASK]" or empty; every answer records raw, content-free and
    calibrated probabilities), `none`; `auto`: contextual on the embedded model. On a base model
    the scorer's support of a reply is read by likelihood too, and calibrated likewise."""
    seed: int = 0
    """Seed of the random sample (`stance_separation: false`, the vanilla baseline), with
    `generation.seed` and the claim: a run with another `generation.seed` (an experiment's repeat)
    draws another sample."""
    max_unparsed: MaxUnparsed = MAX_UNPARSED
    models: dict[str, str] = {"default": "local"}
    """Which model plays whom. Keys: `default`, `scorer`, `classifier`, `debater_p`, `debater_n`,
    `judge`, `agent` (the one agent of `debate: false` and of the vanilla baseline)."""
    turn_tokens: TurnTokens = 48
    generation: Generation = Generation(temperature=0.2, max_tokens=1024)
    """Sampling settings for every model call (the paper: temperature 0.2, other settings the
    API's defaults; moot bounds replies at 1024 tokens so the answer asked for "at the end" fits)."""
    retry: Retry = Retry()
    backends: Backends = Backends()
    prompts: dict[str, str] = {}

    @model_validator(mode="after")
    def _consistent(self) -> "S2madScenario":
        check_distinct(self.labels, "labels")
        check_aliases(self.aliases, self.labels)
        check_models(self.models, ("default", *ROLES))
        check_prompts(self.prompts, "s2mad", TEMPLATE_FIELDS)
        if self.baseline and (self.stance_separation or self.debate):
            raise fail("the vanilla baseline is one LLM over random comments: set stance_separation: false "
                       "and debate: false", "baseline")
        return self

    def headline_metric(self) -> str:
        return self.metric or "macro_f1"

    def roles(self) -> list[str]:
        if self.baseline:
            return ["agent"]
        return ["scorer", "classifier", *(["debater_p", "debater_n", "judge"] if self.debate else ["agent"])]

    def all_aliases(self) -> dict[str, str]:
        return {**{k: v for k, v in DEFAULT_ALIASES.items() if v in self.labels}, **self.aliases}
