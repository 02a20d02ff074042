"""The negotiation scenario (`protocol: negotiation`, Sun et al.): two (or three) different LLMs.

`models.first` and `models.second` negotiate (first generates, second discriminates), then
flip roles; `models.third`, if given, settles conflicting decisions with four more
negotiations and a six-way vote. Demonstrations: the k nearest training items (offline TF-IDF)
from `demonstrations.train`, a DATA.yaml relative to the scenario file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Mapping, Optional

from pydantic import Field, model_validator

from moot.protocols.items.schema import MAX_UNPARSED, LabelledScenario, Labels, MaxUnparsed, TurnTokens, check_aliases
from moot.kit import (
    Backends, CalibrationSetting, ChoiceSetting, Generation, Retry, Strict, check_models, check_prompts, fail,
)

LLMS = ("first", "second", "third")
TEMPLATE_FIELDS = frozenset({"text", "options", "demonstrations", "reasoning", "decision", "explanation"})


class Demonstrations(Strict):
    """Demonstrations: the nearest training items, with reasoning chains the LLMs write for them."""

    train: Optional[str] = None
    """A DATA.yaml of the training split, relative to the scenario file (the paper's generator
    always has demonstrations; moot's default for a dataset with a training split is
    scenarios/negotiation_knn.yaml); null is zero-shot."""
    k: Annotated[int, Field(ge=0, le=32)] = 4
    """How many nearest training items (K; offline TF-IDF similarity). K and the encoder are
    moot's choices: the paper's method section does not give them."""


class NegotiationInputs(Strict):
    """The item of a single run (no `--dataset`); `--input text=...` overrides it."""

    text: Optional[str] = None


class NegotiationScenario(LabelledScenario):
    """Sentiment by negotiation (Sun et al.): `models.first` generates a decision with its reasoning
    and `models.second` discriminates, until they agree or `max_turns`; then they swap roles.
    Conflicting results bring in `models.third`, if given: four more negotiations and a six-way
    vote."""

    PROTOCOL = "negotiation"
    PLACEHOLDERS = TEMPLATE_FIELDS

    protocol: Literal["negotiation"]
    title: str = "LLM negotiation for sentiment analysis"
    """Shown in transcripts and reports."""
    input: NegotiationInputs = NegotiationInputs()
    labels: Labels = ["positive", "negative"]
    """The closed label set."""
    aliases: dict[str, str] = {}
    """Other answers that map onto a label."""
    metric: Optional[Literal["macro_f1", "accuracy"]] = None
    """The headline metric of a dataset run; null: `accuracy`."""
    max_turns: Annotated[int, Field(ge=1, le=20)] = 3
    """Generator/discriminator exchanges per negotiation before it ends without consensus."""
    demonstrations: Demonstrations = Demonstrations()
    max_unparsed: MaxUnparsed = MAX_UNPARSED
    models: dict[str, str] = {}
    """The LLMs: `first` and `second` (required) negotiate, `third` settles conflicts; they must
    be different model specs unless `allow_same_model`. A bare `--model SPEC` sets all of them."""
    choice: ChoiceSetting = "auto"
    """How the discriminator's yes/no is read: `structured` (the paper's JSON reply, constrained),
    `likelihood` (" yes" / " no" scored where the JSON answer begins; a "no" then gives its
    structured reply for the explanation; falls back to structured without log-probabilities),
    `text` (the JSON asked for without a schema, parsed); `auto`: likelihood on the embedded
    model, else structured."""
    calibration: CalibrationSetting = "auto"
    """How likelihood answers are calibrated: `contextual` (Zhao et al. 2021: each option's
    probability divided by the one the same prompt gives when the input and the reasoning are
    "N/A", "[MASK]" or empty; every answer records raw, content-free and calibrated
    probabilities), `none`; `auto`: contextual on the embedded model. On a base model the
    generator's decision is read by likelihood too, and calibrated likewise; the discriminator's
    yes/no is not calibrated (it is no label)."""
    allow_same_model: bool = False
    """Lets the LLMs share one spec (an offline demo with the one embedded model)."""
    turn_tokens: TurnTokens = 48
    generation: Generation = Generation(temperature=0.0, max_tokens=256)
    retry: Retry = Retry()
    backends: Backends = Backends()
    prompts: dict[str, str] = {}

    @model_validator(mode="after")
    def _consistent(self) -> "NegotiationScenario":
        check_models(self.models, LLMS, what="model key")
        for key in ("first", "second"):
            if key not in self.models:
                raise fail(f"models.{key} is required (the negotiation needs two LLMs)", "models")
        specs = [self.models[k] for k in LLMS if k in self.models]
        if len(set(specs)) != len(specs) and not self.allow_same_model:
            raise fail("the LLMs must be different model specs (the paper's point is two different "
                       "models); set allow_same_model: true for an offline demo", "models")
        check_aliases(self.aliases, self.labels)
        check_prompts(self.prompts, "negotiation", TEMPLATE_FIELDS)
        return self

    def headline_metric(self) -> str:
        return self.metric or "accuracy"

    def roles(self) -> list[str]:
        return [k for k in LLMS if k in self.models]

    def resolve_paths(self, base: Path) -> "NegotiationScenario":
        """`demonstrations.train` is relative to the scenario file's folder."""
        train = self.demonstrations.train
        if not train or Path(train).is_absolute():
            return self
        absolute = str((base / train).resolve())
        return self.model_copy(update={"demonstrations": self.demonstrations.model_copy(update={"train": absolute})})

    def check_models(self, resolved: Mapping[str, str]) -> None:
        specs = list(resolved.values())
        if len(set(specs)) != len(specs) and not self.allow_same_model:
            raise ValueError("the negotiating LLMs must be different model specs (the paper's point is two "
                             "different models); set allow_same_model: true for an offline demo")
