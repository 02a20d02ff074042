"""Pydantic validation errors turned into one-line `file:line: key.path: message` problems.

Kept apart from the schema so every protocol's scenario reports problems the same way.
"""

from __future__ import annotations

import re
from typing import Optional

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from moot.scenario.blocks import unknown
from moot.errors import closest, nearest
from moot.safety.yamlsource import KeyPath, SourceError, YamlSource

_MARKED = re.compile(r"^@([^@]*)@ (.*)$", re.S)  # a cross-field problem made by scenario_blocks.fail


class ScenarioError(SourceError):
    """A scenario file that cannot be used; its message is one line."""


def to_scenario_error(exc: ValidationError, source: YamlSource, model: type[BaseModel]) -> ScenarioError:
    """The first problem of a failed validation (the count of the others in parentheses)."""
    errors = without_echoes(exc.errors(include_url=False), model)
    first = error_of(first_cause(errors), source, model)
    extra = f" (got {len(errors)} problems; fix this one first)" if len(errors) > 1 else ""
    return ScenarioError(source.file, first.detail + extra, first.key, first.line)


def first_cause(errors: list[ErrorDetails]) -> ErrorDetails:
    """The error to report first: an unknown key (a typo also makes the intended key "missing",
    so the unknown key is the cause), else the first. Shared with dataset specs."""
    return next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])


def without_echoes(errors: list[ErrorDetails], model: Optional[type[BaseModel]]) -> list[ErrorDetails]:
    """A misspelt key also makes the key it meant "missing": keep only the misspelling's error.
    Shared with dataset specs."""
    meant = set()
    for err in errors:
        loc = tuple(err["loc"])
        if err["type"] == "extra_forbidden" and (match := closest(str(loc[-1]), _allowed_keys(loc[:-1], model))):
            meant.add(loc[:-1] + (match,))
    return [err for err in errors if not (err["type"] == "missing" and tuple(err["loc"]) in meant)]


def error_of(err: ErrorDetails, source: YamlSource, model: Optional[type[BaseModel]] = None) -> ScenarioError:
    """One pydantic error (or marked cross-field problem) as a one-line ScenarioError."""
    key, message = key_and_message(err, model)
    return ScenarioError(source.file, message, key, source.line_of(key))


def key_and_message(err: ErrorDetails, model: Optional[type[BaseModel]] = None) -> tuple[KeyPath, str]:
    """The key path and the user's wording of one pydantic error (or marked cross-field problem)."""
    key, message = tuple(err["loc"]), err["msg"]
    marked = _MARKED.match(message.removeprefix("Value error, "))
    if marked:
        key = tuple(int(p) if p.isdigit() else p for p in marked.group(1).split(".") if p)
        message = marked.group(2)
    elif err["type"] == "extra_forbidden":
        allowed = _allowed_keys(key[:-1], model)
        message = unknown("key", key[-1], allowed) if allowed else "unknown key"
    elif err["type"] == "missing":
        message = "required key is missing"
    elif err["type"] == "too_short" and key and key[-1] == "participants":
        message = "at least 2 participants are required"
    elif err["type"] == "too_short" and key and key[-1] == "topics":
        message = "at least 1 topic is required"
    elif err["type"] == "string_pattern_mismatch":
        message = "must start with a letter and contain only letters, digits and _"
    else:
        message += choice_hint(err)
    return key, message


def choice_hint(err: ErrorDetails) -> str:
    """` (did you mean 'judge'?)` for a value close to one of the choices a Literal allows."""
    if err["type"] != "literal_error" or not isinstance(err.get("input"), str):
        return ""
    return nearest(err["input"], re.findall(r"'([^']*)'", (err.get("ctx") or {}).get("expected", "")))


def _allowed_keys(parent: KeyPath, model: Optional[type[BaseModel]]) -> list[str]:
    for part in parent:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(part)
        model = _model_of(field.annotation) if field else None
    return list(model.model_fields) if model else []


def _model_of(annotation: object) -> Optional[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found:
            return found
    return None
