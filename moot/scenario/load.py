"""Reading any protocol's scenario file: strict YAML, the protocol's schema, one-line errors.

`protocol:` picks the schema from the protocol registry, which installs itself here
(moot.contract.registry calls `use_schemas`: the scenario layer imports nothing above it); a file
without it is a decision conference, as before protocols had names. Anything unknown or inconsistent is rejected with one
line naming the file, line and key path (and the nearest valid name), before anything runs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping, Optional, Protocol

from pydantic import BaseModel, ValidationError

from moot.scenario.errors import ScenarioError, error_of, to_scenario_error, without_echoes
from moot.errors import nearest
from moot.plugins import declare_builtin
from moot.safety.yamlsource import SourceError, YamlSource, read_yaml

DEFAULT_PROTOCOL = "conference"  # files written before `protocol:` existed


class Schemas(Protocol):
    """Where a scenario file's `protocol:` finds its schema (moot.contract.registry.Registry)."""

    def schema(self, name: str) -> Optional[type[BaseModel]]:
        """The scenario model of a protocol a file may name; None: no such protocol."""

    def names(self) -> list[str]:
        """The protocols a file may name."""


_schemas: list[Schemas] = []


def use_schemas(schemas: Schemas) -> None:
    """Look scenario schemas up in `schemas`: the hook the protocol registry installs."""
    _schemas[:] = [schemas]


def installed_schemas() -> Schemas:
    if not _schemas:
        declare_builtin()  # moot's protocols' registry installs the registry as it is imported
    return _schemas[0]


def load_scenario(path: str | Path) -> Any:
    """Read and validate a scenario file; raise ScenarioError (one line) on any problem."""
    try:
        source = read_yaml(path)
    except SourceError as exc:
        raise ScenarioError(exc.file, exc.detail, exc.key, exc.line) from None
    return scenario_from_source(source).resolve_paths(Path(path).resolve().parent)


def scenario_from_source(source: YamlSource) -> Any:
    data = _mapping(source)
    model = schema_of(data, source)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise to_scenario_error(exc, source, model) from None


def _mapping(source: YamlSource) -> dict[str, object]:
    if not isinstance(source.data, dict):
        raise ScenarioError(source.file, "a scenario must be a mapping of keys", (), source.line_of(()))
    return source.data


def schema_of(data: Mapping[str, object], source: Optional[YamlSource] = None) -> type[BaseModel]:
    """The scenario model of the file's `protocol:`; an unknown name is one error, not many."""
    schemas = installed_schemas()
    name = data.get("protocol", DEFAULT_PROTOCOL)
    model = schemas.schema(name) if isinstance(name, str) else None
    if model is None:
        names = schemas.names()
        hint = nearest(name, names) if isinstance(name, str) else ""
        file = source.file if source else "scenario"
        line = source.line_of(("protocol",)) if source else None
        raise ScenarioError(file, f"unknown protocol {name!r}{hint} (allowed: {', '.join(names)})",
                            ("protocol",), line)
    return model


def scenario_errors(path: str | Path) -> list[ScenarioError]:
    """Every problem of a scenario file, one ScenarioError each (empty: the file is valid).

    Field problems are all reported; cross-field checks run only once the fields are valid, as
    pydantic runs them on a complete model."""
    try:
        source = read_yaml(path)
        data = _mapping(source)
        model = schema_of(data, source)
    except SourceError as exc:
        return [exc if isinstance(exc, ScenarioError) else ScenarioError(exc.file, exc.detail, exc.key, exc.line)]
    problems: list[str] = []
    try:
        model.model_validate(data, context={"problems": problems})
    except ValidationError as exc:
        errors = [error_of(err, source, model) for err in without_echoes(exc.errors(include_url=False), model)]
    else:
        errors = [error_of({"loc": (), "msg": text, "type": "value_error", "input": None}, source) for text in problems]
    return sorted(errors, key=lambda e: e.line or 0)  # in file order


def scenario_hash(path: str | Path) -> str:
    """sha256 of the scenario file's bytes: transcripts and reports cite it."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def scenario_content_hash(scenario: BaseModel) -> str:
    """sha256 of the validated scenario as JSON with sorted keys: what actually drives a run.

    Comments, key order, quoting and layout of the file leave it unchanged (the file's own
    sha256, scenario_hash, changes with any byte); resume and run folders compare this. Values
    at their defaults are left out, so a key a later moot adds (with a default) leaves the hash of
    every scenario that does not set it as it was. The prompt templates its roles are sent are in
    it, moot's defaults too: a moot whose default prompts changed hashes the same file otherwise
    (a run folder then compares the file's sha256, moot.scenario.load.same_scenario). The last scenario's hash is kept: every unit of
    a run asks it of the same (frozen) scenario."""
    global _last_hashed
    if _last_hashed[0] is scenario:
        return _last_hashed[1]
    templates = getattr(scenario, "templates", None)
    content = {"scenario": scenario.model_dump(mode="json", exclude_defaults=True),
               "templates": templates() if callable(templates) else {}}
    blob = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(blob.encode("utf-8")).hexdigest()
    _last_hashed = (scenario, digest)
    return digest


_last_hashed: tuple[Optional[BaseModel], str] = (None, "")


def same_scenario(recorded_file: Optional[str], recorded_content: Optional[str], file_sha: str,
                  content_sha: str) -> bool:
    """Whether a recorded run used this scenario: the same content (layout and comments aside),
    or the very same file (runs made before content hashes existed, or recorded by a moot that
    hashed content another way)."""
    return bool(recorded_content) and recorded_content == content_sha or recorded_file == file_sha
