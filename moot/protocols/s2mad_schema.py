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
    before_s: Optional[Annotated[float, Field(ge=0)]] = None


class S2madInputs(Strict):
    """One item given in the file (`--input claim=... --input comment=...` overrides)."""

    claim: Optional[str] = None
    comments: list[str] = []


class S2madScenario(ItemScenario):
    """S2MAD (Zhang et al.): scored comments split by stance, subjectivity, debate rounds, judge."""

    PROTOCOL = "s2mad"

    protocol: Literal["s2mad"]
    title: str = "S2MAD rumor detection"
    input: S2madInputs = S2madInputs()
    labels: Labels = ["fake", "real"]
    aliases: dict[str, str] = {}
    metric: Optional[Literal["macro_f1", "accuracy"]] = None
    k: Annotated[int, Field(ge=1, le=1000)] = 5
    rounds: Annotated[int, Field(ge=0, le=20)] = 2
    stance_separation: bool = True
    subjectivity: Literal["auto", "subjective", "objective"] = "auto"
    early: Early = Early()
    seed: int = 0
    models: dict[str, str] = {"default": "local"}
    generation: Generation = Generation(temperature=0.2, max_tokens=256)
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
