"""The S2MAD scenario (`protocol: s2mad`): stance separation, subjectivity, debate, judge.

Ablations of the paper's Table 2 are data: `stance_separation: false` (random halves),
`subjectivity: subjective | objective` (one initial-opinion prompt for every claim),
`rounds: 0` (w/o debate); a rounds sweep is `rounds: 1..M`; early detection is `early:`.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field, model_validator

from moot.protocols.item_schema import ItemScenario, Labels, check_aliases, check_distinct, check_models, check_prompts
from moot.scenario_blocks import Backends, Generation, Retry, Strict

ROLES = ("scorer", "classifier", "debater_p", "debater_n", "judge")
TEMPLATE_FIELDS = frozenset({"claim", "comment", "comments", "other", "reply_p", "reply_n", "options"})
DEFAULT_ALIASES = {"false": "fake", "true": "real", "rumor": "fake", "rumour": "fake",
                   "non-rumor": "real", "non-rumour": "real"}


class Early(Strict):
    """Early detection: only the first n comments and/or those posted before t seconds."""

    first_n: Optional[Annotated[int, Field(ge=1)]] = None
    """Use only the first n comments."""
    before_s: Optional[Annotated[float, Field(ge=0)]] = None
    """Use only the comments posted before this many seconds."""


class S2madInputs(Strict):
    """The item of a single run (no `--dataset`); `--input claim=...` and repeated
    `--input comment=...` override it."""

    claim: Optional[str] = None
    comments: list[str] = []


class S2madScenario(ItemScenario):
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
    """Debate rounds (M); `0` is the without-debate ablation."""
    stance_separation: bool = True
    """`false` is the ablation that splits the comments into random halves."""
    subjectivity: Literal["auto", "subjective", "objective"] = "auto"
    """`auto` classifies the claim and picks the matching initial-opinion prompt; the others use
    one prompt for every claim (ablations)."""
    early: Early = Early()
    seed: int = 0
    """Seed of the random halves (`stance_separation: false`)."""
    models: dict[str, str] = {"default": "local"}
    """Which model plays whom. Keys: `default`, `scorer`, `classifier`, `debater_p`, `debater_n`,
    `judge`."""
    generation: Generation = Generation(temperature=0.2, max_tokens=256)
    """Sampling settings for every model call (the paper's temperature is 0.2)."""
    retry: Retry = Retry()
    backends: Backends = Backends()
    prompts: dict[str, str] = {}

    @model_validator(mode="after")
    def _consistent(self) -> "S2madScenario":
        check_distinct(self.labels, "labels")
        check_aliases(self.aliases, self.labels)
        check_models(self.models, ("default", *ROLES))
        check_prompts(self.prompts, "s2mad", TEMPLATE_FIELDS)
        return self

    def headline_metric(self) -> str:
        return self.metric or "macro_f1"

    def roles(self) -> list[str]:
        return list(ROLES)

    def all_aliases(self) -> dict[str, str]:
        return {**{k: v for k, v in DEFAULT_ALIASES.items() if v in self.labels}, **self.aliases}
