"""The scenario format described for editors and readers: its JSON Schema (draft 2020-12) and its
key reference (docs/scenarios.md).

One schema for every registered protocol (a oneOf on `protocol`), generated from their pydantic
models, so one `$schema` line serves every scenario file: editors use it for completion and
checking as you type. docs/scenario.schema.json and docs/scenarios.md are these texts, committed
(`moot schema [--docs] --out`); tests keep both equal to them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema
from pydantic_core import core_schema

from moot.api.options import PathLike
from moot.safety.diskio import write_atomic
from moot.safety.places import usable_out
from moot.protocols.registry import REGISTRY
from moot.scenario.keydocs import key_docstrings
from moot.scenario.load import DEFAULT_PROTOCOL

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def description() -> str:
    formats = ", ".join(f"{p.name} ({p.title}{'; the default' if p.name == DEFAULT_PROTOCOL else ''})"
                        for p in REGISTRY.all())
    return (f"A moot scenario. `protocol` picks the format: {formats}. Every key is described in "
            "docs/scenarios.md; check a file with `moot validate FILE`.")


class Documented(GenerateJsonSchema):
    """Pydantic's JSON Schema, each key described by the docstring under it (moot.scenario.keydocs)."""

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        properties = json_schema.get("properties", {})
        for name, text in key_docstrings(schema["cls"]).items():
            if name in properties and "description" not in properties[name]:
                properties[name]["description"] = text
        return json_schema


def scenario_schema() -> dict[str, Any]:
    """The whole format: exactly one branch of `oneOf` matches a valid scenario."""
    models = [p.scenario for p in REGISTRY.all()]
    refs, defs = models_json_schema([(m, "validation") for m in models], ref_template="#/$defs/{model}",
                                    schema_generator=Documented)
    return {"$schema": DRAFT, "title": "moot scenario", "description": description(),
            "oneOf": [refs[(m, "validation")] for m in models], **defs}


def schema_text(docs: bool = False) -> str:
    """The JSON Schema as indented JSON; `docs`: the Markdown key reference (docs/scenarios.md) instead."""
    return docs_text() if docs else json.dumps(scenario_schema(), indent=2, ensure_ascii=False) + "\n"


def docs_text() -> str:
    from moot.contract.docs import scenarios_md

    return scenarios_md(REGISTRY.all())


def write_schema(out: PathLike, docs: bool = False) -> Path:
    """Write `schema_text(docs)` to `out` whole (a file, never a folder); returns where."""
    path = usable_out(Path(out), "file")
    write_atomic(path, schema_text(docs))
    return path
