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
from moot.scenario_blocks import (Backends, Generation, Retry, ScenarioBase, Strict, check_spec, check_template,
                                  fail)
from moot.yamlsource import format_key
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


class Scenario(ScenarioBase):
    """A decision conference: task, topics in order, roles, models, limits, routing."""

    PROTOCOL = "conference"

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

    def agent(self, name: str) -> tuple[str, AgentSpec]:
        """(role, agent) of the agent called `name`."""
        return next((role, a) for role, a in self.agents() if a.name == name)

    def roles(self) -> list[str]:
        """The agents that take a model, by name, in speaking order."""
        return [a.name for _, a in self.agents()]

    def model_keys(self, name: str) -> tuple[str, ...]:
        role, _ = self.agent(name)
        return (name, "participants" if role == "participant" else role)

    def model_for(self, name: str) -> str:
        """Model spec of an agent: its own `model` > models[agent] > models[role] > default."""
        return self.agent(name)[1].model or super().model_for(name)

    def generation_for(self, name: str) -> Generation:
        agent = self.agent(name)[1]
        if agent.generation is None:
            return self.generation
        return self.generation.model_copy(update=agent.generation.model_dump(exclude_none=True))


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
