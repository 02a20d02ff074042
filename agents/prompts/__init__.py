"""Prompt templates shipped with moot, read with the safe YAML loader."""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Template
from typing import Mapping

import yaml

PROMPT_FIELDS = frozenset({
    "name", "persona", "title", "task", "topic", "topic_number", "topic_count", "round",
    "max_rounds", "participants", "topics", "judge_reason", "criteria", "judge_decision", "reference",
    "cast", "agenda", "criterion", "criterion_text", "count", "all", "item",
})


@cache
def default_templates(protocol: str = "conference") -> Mapping[str, str]:
    """The shipped templates of a protocol, keyed by template name."""
    text = resources.files(__name__).joinpath(f"{protocol}.yaml").read_text(encoding="utf-8")
    templates: Mapping[str, str] = yaml.safe_load(text)  # the shipped files: names -> template texts
    return templates


def render(template: str, fields: Mapping[str, object]) -> str:
    """Fill $placeholders; unknown ones were rejected when the scenario was validated."""
    return Template(template).safe_substitute({k: str(v) for k, v in fields.items()}).strip()
