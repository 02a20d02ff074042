"""Building blocks every protocol's scenario shares: strict models, generation, retries, backends.

They live apart from the conference schema so the per-item protocols (COLA, S2MAD, negotiation)
reuse them without reaching into its private helpers.
"""

from __future__ import annotations

from pathlib import Path
from string import Template
from typing import Annotated, Any, ClassVar, Mapping, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from moot.agents.prompts import default_templates
from moot.models.spec import parse_spec


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Generation(Strict):
    """Sampling settings sent with every model call (max_tokens is always bounded)."""

    temperature: Annotated[float, Field(ge=0, le=2)] = 0.7
    max_tokens: Annotated[int, Field(ge=1, le=8192)] = 256
    seed: Optional[int] = 0
    top_p: Optional[Annotated[float, Field(gt=0, le=1)]] = None
    repeat_penalty: Optional[Annotated[float, Field(ge=1, le=2)]] = 1.25


class Retry(Strict):
    """Bounded retries for failed model calls (errors, timeouts, empty replies)."""

    attempts: Annotated[int, Field(ge=1, le=10)] = 3
    backoff_s: Annotated[float, Field(ge=0, le=60)] = 1.0
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 300.0


Endpoints = Optional[Union[str, Annotated[list[str], Field(min_length=1)]]]


def endpoint_list(value: Endpoints) -> tuple[str, ...]:
    """One endpoint or several (a pool serving the same model) as a tuple."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


class OpenAIBackend(Strict):
    base_url: Endpoints = None  # one URL, or a list: each call goes to the least busy
    api_key_env: str = "OPENAI_API_KEY"


class OllamaBackend(Strict):
    host: Endpoints = None  # one host, or a list: each call goes to the least busy


class LocalBackend(Strict):
    n_ctx: Annotated[int, Field(ge=512, le=131072)] = 8192
    n_threads: Optional[Annotated[int, Field(ge=1, le=256)]] = None


class Backends(Strict):
    openai: OpenAIBackend = OpenAIBackend()
    ollama: OllamaBackend = OllamaBackend()
    local: LocalBackend = LocalBackend()


def fail(message: str, *key) -> ValueError:
    """A cross-field problem marked with its key path, so the error names the right line."""
    return ValueError(f"@{'.'.join(map(str, key))}@ {message}")


def check_spec(spec: str, *key) -> None:
    try:
        parse_spec(spec)
    except ValueError as exc:
        raise fail(str(exc), *key) from None


def check_template(template: str, fields: frozenset[str], *key, list_allowed: bool = False) -> None:
    """A prompt template may use only the placeholders its role is given."""
    unknown = sorted(set(Template(template).get_identifiers()) - fields)
    if unknown or not Template(template).is_valid():
        detail = f"unknown placeholder ${unknown[0]}" if unknown else "malformed $placeholder"
        if list_allowed:
            detail += f" (allowed: {', '.join('$' + f for f in sorted(fields))})"
        raise fail(detail, *key)


class ScenarioBase(Strict):
    """What the engine asks of every protocol's scenario (moot.protocol checks these exist).

    Roles are the names that take a model (a conference's agents; COLA's analysts, debaters and
    judger; ...). A role's model is named, most specific first, by the keys `model_keys(role)`
    gives, then `default`; `--model KEY=SPEC` may use any of those keys."""

    PROTOCOL: ClassVar[str]

    @model_validator(mode="before")
    @classmethod
    def _partial_generation(cls, data: Any) -> Any:
        """`generation: {seed: 7}` changes the seed and keeps the protocol's own defaults for the
        rest (COLA's temperature 0, S2MAD's 0.2, ...), not the generic ones."""
        declared = cls.model_fields.get("generation")
        given = data.get("generation") if isinstance(data, dict) else None
        if declared is not None and isinstance(declared.default, BaseModel) and isinstance(given, dict):
            data = {**data, "generation": {**declared.default.model_dump(), **given}}
        return data

    def roles(self) -> list[str]:
        raise NotImplementedError

    def model_keys(self, role: str) -> tuple[str, ...]:
        return (role,)

    def model_for(self, role: str) -> str:
        models: Mapping[str, str] = getattr(self, "models", {})
        return next((models[k] for k in self.model_keys(role) if k in models), models.get("default", "local"))

    def generation_for(self, role: str) -> "Generation":
        return self.generation  # type: ignore[attr-defined]

    def templates(self) -> dict[str, str]:
        return {**default_templates(self.PROTOCOL), **getattr(self, "prompts", {})}

    def resolve_paths(self, base: Path) -> "ScenarioBase":
        """The scenario with file paths it names taken relative to `base` (its file's folder)."""
        return self

    def check_models(self, resolved: Mapping[str, str]) -> None:
        """A protocol's rule on the models finally chosen (e.g. negotiation: two different LLMs)."""

    def headline_metric(self) -> Optional[str]:
        return getattr(self, "metric", None)

    def input_fields(self) -> dict[str, Any]:
        """The one item given in the file (`input:`), for a run without a dataset."""
        given = getattr(self, "input", None)
        return given.model_dump(exclude_none=True) if given is not None else {}
