"""What the per-item protocols' scenarios (COLA, S2MAD, negotiation) have in common.

Each protocol keeps its own fields (their order is the order users see in errors and the
schema); the label checks they share — distinct labels, aliases onto labels — live here so the
three report problems in the same words. The model-role and prompt checks (names and
placeholders), shared with the conference, are in moot.scenario.blocks.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Mapping

from pydantic import Field

from moot.scenario.blocks import ScenarioBase, fail

Label = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
Labels = Annotated[list[Label], Field(min_length=2)]  # a closed label set: every prediction is one


class ItemScenario(ScenarioBase):
    """Base of a per-item protocol's scenario; PROTOCOL names its shipped prompt templates."""

    PROTOCOL: ClassVar[str]


def check_distinct(values: list, *key) -> None:
    if len(set(values)) != len(values):
        raise fail(f"{key[-1]} must be distinct", *key)


def check_aliases(aliases: Mapping[str, str], labels: list[str]) -> None:
    for key, value in aliases.items():
        if value not in labels:
            raise fail(f"maps to {value!r}, not a label", "aliases", key)


