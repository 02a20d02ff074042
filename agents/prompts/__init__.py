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


TURN_INDENT = "    "  # before each further line of a turn's text, wherever a later prompt shows it


def inset(text: str) -> str:
    """A turn's text as a later prompt shows it: its first line as written (after the speaker's
    label or heading), each further line indented by TURN_INDENT. A speaker's label, or a heading
    of the prompt, only ever starts a line, so a reply that writes `Judge: AGREEMENT` on a line of
    its own cannot pass for the judge's turn. Every kind of line break counts (\\r, \\u2028, ...)
    and is written as \\n; blank lines stay blank."""
    first, *rest = text.splitlines() or [""]
    return "\n".join([first, *(TURN_INDENT + line if line.strip() else "" for line in rest)])


def render(template: str, fields: Mapping[str, object]) -> str:
    """Fill $placeholders; unknown ones were rejected when the scenario was validated."""
    return Template(template).safe_substitute({k: str(v) for k, v in fields.items()}).strip()
