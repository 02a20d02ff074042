"""Structured replies (judge verdicts, moderator decisions, evaluator scores) on every backend.

Constrained decoding (llama.cpp grammars, OpenAI `json_schema`, Ollama `format`) makes every
*finished* reply match the schema, but a reply cut off by max_tokens is still broken JSON. So a
structured call's token limit is raised to the longest reply its schema admits: every field of
our schemas is bounded (labels and scores are enums, free text has a maxLength), so that limit
is finite. Plain turns keep the scenario's max_tokens unchanged.
"""

from __future__ import annotations

import json
from typing import Any, Optional, TypeGuard

from pydantic import BaseModel

Schema = dict[str, Any]  # a JSON Schema (pydantic's model_json_schema)
MARGIN = 16  # tokens of slack on top of the computed bound
JSON_SCHEMA = "json_schema"  # OpenAI's structured outputs (OpenAI, vLLM, llama.cpp's llama-server, ...)
JSON_OBJECT_SCHEMA = "json_object+schema"  # {"type": "json_object", "schema": ...} (llama-cpp-python's server)


def is_model(output: object) -> TypeGuard[type[BaseModel]]:
    return isinstance(output, type) and issubclass(output, BaseModel)


def reply_budget(output: type[BaseModel]) -> Optional[int]:
    """Upper bound on the tokens of any reply `output`'s schema admits, or None if unbounded.

    Counts the characters of the longest compact JSON object the schema allows, with one space
    between tokens (as llama.cpp's JSON grammar allows), taking every character as at most one
    token: a generated token always carries at least one character of text (only byte-fallback
    tokens of rare non-ASCII characters carry less).
    """
    schema = output.model_json_schema()
    size = _longest_object(schema, schema.get("$defs", {}))
    return None if size is None else size + MARGIN


def _longest_object(schema: Schema, defs: Schema) -> Optional[int]:
    """Characters of the longest compact object a schema allows (None: unbounded or not an object)."""
    properties = schema.get("properties")
    if schema.get("type") != "object" or not properties:
        return None
    size = 4  # "{ " and "} "
    for key, prop in properties.items():
        value = _longest_value(prop, defs)
        if value is None:
            return None
        size += len(json.dumps(key)) + 6 + value  # key, ": ", the value, a space, ", "
    return size


def _longest_value(prop: Schema, defs: Schema) -> Optional[int]:
    if "$ref" in prop:  # a nested object (e.g. one per reference item of the coverage assessor)
        return _longest_object(defs.get(prop["$ref"].rsplit("/", 1)[-1], {}), defs)
    if "enum" in prop:
        return max(len(json.dumps(v)) for v in prop["enum"])
    if "const" in prop:
        return len(json.dumps(prop["const"]))
    if prop.get("type") == "string" and "maxLength" in prop:
        return int(prop["maxLength"]) + 2
    if prop.get("type") == "boolean":
        return 5
    return None


def structured_max_tokens(max_tokens: Optional[int], output: Any) -> Optional[int]:
    """The token limit of a call: raised to the schema's bound for structured replies."""
    if max_tokens is None or not is_model(output):
        return max_tokens
    budget = reply_budget(output)
    return max(int(max_tokens), budget) if budget else max_tokens


def response_format(output: type[BaseModel], dialect: str = JSON_SCHEMA) -> dict[str, Any]:
    """The OpenAI-style `response_format` asking for `output`'s schema, in one of two dialects.

    The schema is the strict one OpenAI's SDK derives from the model (all fields required, no
    extra keys), i.e. exactly what its `parse()` helper, used by AutoGen, would send.
    """
    from openai.lib._parsing._completions import type_to_response_format_param

    param = type_to_response_format_param(output)
    assert isinstance(param, dict)  # a model's format: its JSON schema
    standard: dict[str, Any] = dict(param)
    if dialect == JSON_OBJECT_SCHEMA:
        return {"type": "json_object", "schema": standard["json_schema"]["schema"]}
    return standard
