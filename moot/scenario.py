"""The decision-conference scenario format: strict schema, loading and validation.

A scenario is data: who takes part (roles, personas, prompts), what they discuss (topics),
which model plays each role, and how turns are routed. Anything unknown or inconsistent is
rejected with one line naming the file, line and key path, before anything runs.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from string import Template
from typing import Annotated, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

from agents.prompts import PROMPT_FIELDS, TEMPLATE_KEYS
from moot.models.spec import parse_spec
from moot.yamlsource import SourceError, YamlSource, format_key, read_yaml

SCHEMA_VERSION = 1
ROLE_KEYS = ("moderator", "participants", "judge", "evaluator")
NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Generation(Strict):
    """Sampling settings sent with every model call (max_tokens is always bounded)."""

    temperature: Annotated[float, Field(ge=0, le=2)] = 0.7
    max_tokens: Annotated[int, Field(ge=1, le=8192)] = 256
    seed: Optional[int] = 0
    top_p: Optional[Annotated[float, Field(gt=0, le=1)]] = None
    repeat_penalty: Optional[Annotated[float, Field(ge=1, le=2)]] = 1.25


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


class Retry(Strict):
    """Bounded retries for failed model calls (errors, timeouts, empty replies)."""

    attempts: Annotated[int, Field(ge=1, le=10)] = 3
    backoff_s: Annotated[float, Field(ge=0, le=60)] = 1.0
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 300.0


class Routing(Strict):
    """Turn routing. Defaults follow Algorithm 1 of Heller et al.

    agreement: who ends a topic — the judge (paper default) or the moderator (§5.2.2 variant).
    on_more_debate: who speaks after MORE_DEBATE — the moderator (Algorithm 1) or the first
    participant directly (as printed in Fig. A2-A3).
    """

    agreement: Literal["judge", "moderator"] = "judge"
    on_more_debate: Literal["moderator", "participants"] = "moderator"


class OpenAIBackend(Strict):
    base_url: Optional[str] = None
    api_key_env: str = "OPENAI_API_KEY"


class OllamaBackend(Strict):
    host: Optional[str] = None


class LocalBackend(Strict):
    n_ctx: Annotated[int, Field(ge=512, le=131072)] = 8192
    n_threads: Optional[Annotated[int, Field(ge=1, le=256)]] = None


class Backends(Strict):
    openai: OpenAIBackend = OpenAIBackend()
    ollama: OllamaBackend = OllamaBackend()
    local: LocalBackend = LocalBackend()


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


class ScenarioError(SourceError):
    """A scenario file that cannot be used; its message is one line."""


def _fail(message: str, *key) -> ValueError:
    return ValueError(f"@{'.'.join(map(str, key))}@ {message}")


def _agent_keys(s: Scenario) -> list[tuple[tuple, AgentSpec]]:
    """(key path in the file, agent) pairs: ('moderator',), ('participants', 1), ..."""
    keys = [(("moderator",), s.moderator)] + [(("participants", i), p) for i, p in enumerate(s.participants)]
    return keys + [((role,), a) for role, a in (("judge", s.judge), ("evaluator", s.evaluator)) if a]


def _check_unique_names(s: Scenario) -> None:
    seen: dict[str, str] = {}
    for key, agent in _agent_keys(s):
        if agent.name.lower() == "user":
            raise _fail("'user' is reserved for the task message", *key, "name")
        if agent.name in seen:
            raise _fail(f"duplicate agent name {agent.name!r} (also used by {seen[agent.name]})", *key, "name")
        seen[agent.name] = format_key(key)


def _check_agreement(s: Scenario) -> None:
    if s.routing.agreement == "judge" and s.judge is None:
        raise _fail("is 'judge' but no judge is declared (declare one, or use 'moderator')",
                    "routing", "agreement")
    if s.routing.agreement == "moderator" and s.judge is not None:
        raise _fail("is 'moderator' (without-judge variant) but a judge is declared", "routing", "agreement")


def _check_models(s: Scenario) -> None:
    names = {a.name for _, a in s.agents()}
    for key, spec in s.models.items():
        if key != "default" and key not in ROLE_KEYS and key not in names:
            allowed = ", ".join(("default",) + ROLE_KEYS + tuple(sorted(names)))
            raise _fail(f"unknown agent or role (allowed: {allowed})", "models", key)
        _check_spec(spec, "models", key)
    for key, agent in _agent_keys(s):
        if agent.model:
            _check_spec(agent.model, *key, "model")


def _check_spec(spec: str, *key) -> None:
    try:
        parse_spec(spec)
    except ValueError as exc:
        raise _fail(str(exc), *key) from None


def _check_prompts(s: Scenario) -> None:
    for key, template in s.prompts.items():
        if key not in TEMPLATE_KEYS:
            raise _fail(f"unknown prompt (allowed: {', '.join(sorted(TEMPLATE_KEYS))})", "prompts", key)
        _check_template(template, "prompts", key)
    for key, agent in _agent_keys(s):
        if agent.prompt is not None:
            _check_template(agent.prompt, *key, "prompt")


def _check_template(template: str, *key) -> None:
    unknown = sorted(set(Template(template).get_identifiers()) - PROMPT_FIELDS)
    if unknown or not Template(template).is_valid():
        detail = f"unknown placeholder ${unknown[0]}" if unknown else "malformed $placeholder"
        raise _fail(f"{detail} (allowed: {', '.join('$' + f for f in sorted(PROMPT_FIELDS))})", *key)


_MARKED = re.compile(r"^@([^@]*)@ (.*)$", re.S)


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
        raise _to_scenario_error(exc, source, model) from None


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
        errors = [_error_of(err, source, model) for err in exc.errors(include_url=False)]
    else:
        errors = [_error_of({"loc": (), "msg": text, "type": "value_error"}, source) for text in problems]
    return sorted(errors, key=lambda e: e.line or 0)  # in file order


def _to_scenario_error(exc: ValidationError, source: YamlSource,
                       model: type[BaseModel] | None = None) -> ScenarioError:
    errors = exc.errors(include_url=False)
    # An unknown key (a typo) also makes the intended key "missing"; report the cause.
    first = _error_of(next((e for e in errors if e["type"] == "extra_forbidden"), errors[0]), source, model)
    extra = f" (got {len(errors)} problems; fix this one first)" if len(errors) > 1 else ""
    return ScenarioError(source.file, first.detail + extra, first.key, first.line)


def _error_of(err: dict, source: YamlSource, model: type[BaseModel] | None = None) -> ScenarioError:
    """One pydantic error (or marked cross-field problem) as a one-line ScenarioError."""
    key, message = tuple(err["loc"]), err["msg"]
    marked = _MARKED.match(message.removeprefix("Value error, "))
    if marked:
        key = tuple(int(p) if p.isdigit() else p for p in marked.group(1).split(".") if p)
        message = marked.group(2)
    elif err["type"] == "extra_forbidden":
        message = "unknown key" + _allowed_keys(key[:-1], model or Scenario)
    elif err["type"] == "missing":
        message = "required key is missing"
    elif err["type"] == "too_short" and key and key[-1] == "participants":
        message = "at least 2 participants are required"
    elif err["type"] == "too_short" and key and key[-1] == "topics":
        message = "at least 1 topic is required"
    elif err["type"] == "string_pattern_mismatch":
        message = "must start with a letter and contain only letters, digits and _"
    return ScenarioError(source.file, message, key, source.line_of(key))


def _allowed_keys(parent: tuple, model: type[BaseModel] | None = None) -> str:
    model = model or Scenario
    for part in parent:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(part)
        model = _model_of(field.annotation) if field else None
    return f" (allowed: {', '.join(model.model_fields)})" if model else ""


def _model_of(annotation) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found:
            return found
    return None


def scenario_hash(path: str | Path) -> str:
    """sha256 of the scenario file's bytes: transcripts and reports cite it."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
