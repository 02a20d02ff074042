"""What the per-item protocols' scenarios (COLA, S2MAD, negotiation) have in common.

Each protocol keeps its own fields (their order is the order users see in errors and the
schema); the label checks they share — distinct labels, aliases onto labels — live here so the
three report problems in the same words. The model-role and prompt checks (names and
placeholders), shared with the conference, are in moot.scenario.blocks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, ClassVar, Mapping, Optional, Sequence

from pydantic import Field

from moot.kit import ScenarioBase, fail

Label = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
Labels = Annotated[list[Label], Field(min_length=2)]  # a closed label set: every prediction is one


TurnTokens = Annotated[int, Field(ge=1, le=8192, description=(
    "On a base model (the document form): most tokens one turn may have (it then ends at its last "
    "full sentence; `generation.max_tokens` bounds it too). The embedded model's turns ran 40-100 "
    "tokens; 48 is a sentence or two. Chat replies keep `generation.max_tokens`."))]
MaxUnparsed = Optional[Annotated[float, Field(ge=0, le=1)]]
MAX_UNPARSED = Field(default=None, description=(
    "The largest share of unparsed answers (0-1) a run may end with and succeed; more ends it with "
    "exit code 4 (its results are kept). Null: only a run whose every answer is unparsed fails so; "
    "1: none does."))


class ItemScenario(ScenarioBase):
    """Base of a per-item protocol's scenario; PROTOCOL names its shipped prompt templates."""

    PROTOCOL: ClassVar[str]


class LabelledScenario(ItemScenario):
    """Base of a per-item protocol whose units predict one of `labels`, scored by `metric`."""

    if TYPE_CHECKING:  # each protocol declares them in its own field order
        labels: list[str]
        metric: Optional[str]
        max_unparsed: Optional[float]

    def label_set(self) -> list[str]:
        return list(self.labels)

    def declared_metric(self) -> Optional[str]:
        return self.metric

    def unparsed_limit(self) -> Optional[float]:
        return self.max_unparsed


def check_distinct(values: Sequence[str], *key: object) -> None:
    if len(set(values)) != len(values):
        raise fail(f"{key[-1]} must be distinct", *key)


def check_aliases(aliases: Mapping[str, str], labels: list[str]) -> None:
    for key, value in aliases.items():
        if value not in labels:
            raise fail(f"maps to {value!r}, not a label", "aliases", key)


