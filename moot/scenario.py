"""The decision-conference scenario format: strict schema, loading and validation.

A scenario is data: who takes part (roles, personas, prompts), what they discuss (topics),
which model plays each role, and how turns are routed. Anything unknown or inconsistent is
rejected with one line naming the file, line and key path, before anything runs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Literal, Optional

from pydantic import BaseModel, Field, ValidationError, ValidationInfo, model_validator

from moot.agents.prompts import PROMPT_FIELDS, TEMPLATE_KEYS
from moot.scenario_blocks import Backends, Generation, Retry, Strict, check_spec, check_template, fail
from moot.scenario_errors import ScenarioError, error_of, to_scenario_error
from moot.yamlsource import SourceError, YamlSource, format_key, read_yaml

__all__ = ["Backends", "Generation", "Retry", "Scenario", "ScenarioError", "Strict", "load_scenario",
           "same_scenario", "scenario_content_hash", "scenario_errors", "scenario_from_source",
           "scenario_hash"]

SCHEMA_VERSION = 1
ROLE_KEYS = ("moderator", "participants", "judge", "evaluator")
NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"


class GenerationOverride(Strict):
    """Per-agent changes to the scenario's generation settings."""

    temperature: Optional[Annotated[float, Field(ge=0, le=2)]] = None
    max_tokens: Optional[Annotated[int, Field(ge=1, le=8192)]] = None
    seed: Optional[int] = None
    top_p: Optional[Annotated[float, Field(gt=0, le=1)]] = None
    repeat_penalty: Optional[Annotated[float, Field(ge=1, le=2)]] = None


class AgentSpec(Strict):
    """One agent: a name (a Python identifier, as AutoGen requires) and who it is."""

    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    persona: str = ""
    prompt: Optional[str] = None
    model: Optional[str] = None
    generation: Optional[GenerationOverride] = None


class Limits(Strict):
    max_rounds_per_topic: Annotated[int, Field(ge=1, le=100)] = 3
    max_messages: Annotated[int, Field(ge=2, le=10_000)] = 200
    context_messages: Annotated[int, Field(ge=1, le=500)] = 12


class Routing(Strict):
    """Turn routing. Defaults follow Algorithm 1 of Heller et al.

    agreement: who ends a topic — the judge (paper default) or the moderator (§5.2.2 variant).
    on_more_debate: who speaks after MORE_DEBATE — the moderator (Algorithm 1) or the first
    participant directly (as printed in Fig. A2-A3).
    """

    agreement: Literal["judge", "moderator"] = "judge"
    on_more_debate: Literal["moderator", "participants"] = "moderator"


class Scenario(Strict):
    """A decision conference: task, topics in order, roles, models, limits, routing."""

    protocol: Literal["conference"] = "conference"
    title: Annotated[str, Field(min_length=1)]
    task: Annotated[str, Field(min_length=1)]
    topics: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    moderator: AgentSpec
    participants: Annotated[list[AgentSpec], Field(min_length=2)]
    judge: Optional[AgentSpec] = None
    evaluator: Optional[AgentSpec] = None
    models: dict[str, str] = {"default": "local"}
    generation: Generation = Generation()
    limits: Limits = Limits()
    retry: Retry = Retry()
    routing: Routing = Routing()
    backends: Backends = Backends()
    prompts: dict[str, str] = {}

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> "Scenario":
        problems = (info.context or {}).get("problems")  # a list: collect, don't stop (validate)
        for check in (_check_unique_names, _check_agreement, _check_models, _check_prompts):
            try:
                check(self)
            except ValueError as exc:
                if problems is None:
                    raise
                problems.append(str(exc))
        return self

    def agents(self) -> list[tuple[str, AgentSpec]]:
        """(role, agent) pairs in speaking order of a round."""
        pairs = [("moderator", self.moderator)] + [("participant", p) for p in self.participants]
        pairs += [(role, a) for role, a in (("judge", self.judge), ("evaluator", self.evaluator)) if a]
        return pairs

    def model_for(self, role: str, agent: AgentSpec) -> str:
        """Model spec of an agent: agent field > models[agent] > models[role] > default."""
        role_key = "participants" if role == "participant" else role
        return (agent.model or self.models.get(agent.name) or self.models.get(role_key)
                or self.models.get("default", "local"))

    def generation_for(self, agent: AgentSpec) -> Generation:
        if agent.generation is None:
            return self.generation
        changes = agent.generation.model_dump(exclude_none=True)
        return self.generation.model_copy(update=changes)


def _agent_keys(s: Scenario) -> list[tuple[tuple, AgentSpec]]:
    """(key path in the file, agent) pairs: ('moderator',), ('participants', 1), ..."""
    keys = [(("moderator",), s.moderator)] + [(("participants", i), p) for i, p in enumerate(s.participants)]
    return keys + [((role,), a) for role, a in (("judge", s.judge), ("evaluator", s.evaluator)) if a]


def _check_unique_names(s: Scenario) -> None:
    seen: dict[str, str] = {}
    for key, agent in _agent_keys(s):
        if agent.name.lower() == "user":
            raise fail("'user' is reserved for the task message", *key, "name")
        if agent.name in seen:
            raise fail(f"duplicate agent name {agent.name!r} (also used by {seen[agent.name]})", *key, "name")
        seen[agent.name] = format_key(key)


def _check_agreement(s: Scenario) -> None:
    if s.routing.agreement == "judge" and s.judge is None:
        raise fail("is 'judge' but no judge is declared (declare one, or use 'moderator')",
                    "routing", "agreement")
    if s.routing.agreement == "moderator" and s.judge is not None:
        raise fail("is 'moderator' (without-judge variant) but a judge is declared", "routing", "agreement")


def _check_models(s: Scenario) -> None:
    names = {a.name for _, a in s.agents()}
    for key, spec in s.models.items():
        if key != "default" and key not in ROLE_KEYS and key not in names:
            allowed = ", ".join(("default",) + ROLE_KEYS + tuple(sorted(names)))
            raise fail(f"unknown agent or role (allowed: {allowed})", "models", key)
        check_spec(spec, "models", key)
    for key, agent in _agent_keys(s):
        if agent.model:
            check_spec(agent.model, *key, "model")


def _check_prompts(s: Scenario) -> None:
    for key, template in s.prompts.items():
        if key not in TEMPLATE_KEYS:
            raise fail(f"unknown prompt (allowed: {', '.join(sorted(TEMPLATE_KEYS))})", "prompts", key)
        check_template(template, PROMPT_FIELDS, "prompts", key, list_allowed=True)
    for key, agent in _agent_keys(s):
        if agent.prompt is not None:
            check_template(agent.prompt, PROMPT_FIELDS, *key, "prompt", list_allowed=True)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; raise ScenarioError (one line) on any problem."""
    try:
        source = read_yaml(path)
    except SourceError as exc:
        raise ScenarioError(exc.file, exc.detail, exc.key, exc.line) from None
    return scenario_from_source(source)


def scenario_from_source(source: YamlSource) -> Scenario:
    data = _mapping(source)
    model = _schema_of(data)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise to_scenario_error(exc, source, model) from None


def _mapping(source: YamlSource) -> dict:
    if not isinstance(source.data, dict):
        raise ScenarioError(source.file, "a scenario must be a mapping of keys", (), source.line_of(()))
    return source.data


def _schema_of(data: dict) -> type[BaseModel]:
    from moot.protocols import schema_for  # per-item protocols (COLA, ...) have their own schema

    return schema_for(data.get("protocol")) or Scenario


def scenario_errors(path: str | Path) -> list[ScenarioError]:
    """Every problem of a scenario file, one ScenarioError each (empty: the file is valid).

    Field problems are all reported; cross-field checks (names, routing, models, prompts) run
    only once the fields are valid, as pydantic runs them on a complete model.
    """
    try:
        source = read_yaml(path)
        data = _mapping(source)
    except SourceError as exc:
        return [ScenarioError(exc.file, exc.detail, exc.key, exc.line)]
    model, problems = _schema_of(data), []
    try:
        model.model_validate(data, context={"problems": problems})
    except ValidationError as exc:
        errors = [error_of(err, source, model) for err in exc.errors(include_url=False)]
    else:
        errors = [error_of({"loc": (), "msg": text, "type": "value_error"}, source) for text in problems]
    return sorted(errors, key=lambda e: e.line or 0)  # in file order


def scenario_hash(path: str | Path) -> str:
    """sha256 of the scenario file's bytes: transcripts and reports cite it."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def scenario_content_hash(scenario: BaseModel) -> str:
    """sha256 of the validated scenario as JSON with sorted keys: what actually drives a run.

    Comments, key order, quoting and layout of the file leave it unchanged (the file's own
    sha256, scenario_hash, changes with any byte); resume and run directories compare this."""
    blob = json.dumps(scenario.model_dump(mode="json"), sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def same_scenario(recorded_file: Optional[str], recorded_content: Optional[str], file_sha: str,
                  content_sha: str) -> bool:
    """Whether a recorded run used this scenario: by content hash when it was recorded, else
    (runs made before content hashes existed) by the file's sha256."""
    if recorded_content:
        return recorded_content == content_sha
    return recorded_file == file_sha
