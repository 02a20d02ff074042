"""Building blocks every protocol's scenario shares: strict models, generation, retries, backends.

They live apart from the conference schema so the per-item protocols (COLA, S2MAD, negotiation)
reuse them without reaching into its private helpers.
"""

from __future__ import annotations

from string import Template
from typing import Annotated, Optional

from pydantic import BaseModel, ConfigDict, Field

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
