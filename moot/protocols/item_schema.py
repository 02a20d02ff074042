"""What the per-item protocols' scenarios (COLA, S2MAD, negotiation) have in common.

Each protocol keeps its own fields (their order is the order users see in errors and the
schema); the checks they share — distinct labels, aliases onto labels, model roles, prompt
names and placeholders — live here so the three report problems in the same words.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Iterable, Mapping

from pydantic import Field

from moot.agents.prompts import default_templates
from moot.scenario_blocks import ScenarioBase, check_spec, check_template, fail, unknown

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


def check_models(models: Mapping[str, str], allowed: Iterable[str], what: str = "role") -> None:
    allowed = tuple(allowed)
    for key, spec in models.items():
        if key not in allowed:
            raise fail(unknown(what, key, allowed), "models", key)
        check_spec(spec, "models", key)


def check_prompts(prompts: Mapping[str, str], protocol: str, fields: frozenset[str]) -> None:
    templates = default_templates(protocol)
    for key, text in prompts.items():
        if key not in templates:
            raise fail(unknown("prompt", key, sorted(templates)), "prompts", key)
        check_template(text, fields, "prompts", key)
