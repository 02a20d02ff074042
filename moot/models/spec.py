"""Model spec strings: `provider[:model]`, the one way to name a model everywhere.

A spec that does not parse says what was probably meant: `gpt-4o` -> `openai:gpt-4o`,
`opnai:gpt-4o` -> `openai:gpt-4o`, `claude-sonnet-4-5` -> `anthropic:claude-sonnet-4-5`, `llama3` -> `ollama:llama3` or `openai:llama3`.
"""

from __future__ import annotations

import re

from moot.errors import closest
from moot.models.provider import ModelSpec
from moot.models.providers import PROVIDERS, AnyProvider

OPENAI_NAMES = re.compile(r"^(gpt-|chatgpt|o\d|text-|davinci|babbage)")
ANTHROPIC_NAMES = re.compile(r"^claude")


def parse_spec(text: str) -> ModelSpec:
    """Parse `local`, `local:/m.gguf`, `openai:gpt-4o-mini`, `anthropic:claude-sonnet-4-5`, `ollama:llama3`, `scripted[:...]`."""
    provider, _, model = text.strip().partition(":")
    provider = provider.lower()
    if provider not in PROVIDERS:
        raise ValueError(f"unknown model provider {provider!r} in {text!r}{meant(text.strip())} "
                         f"(allowed: {', '.join(PROVIDERS.names())})")
    if PROVIDERS.get(provider).needs_model and not model:
        raise ValueError(f"{provider!r} needs a model name, e.g. '{provider}:MODEL'")
    if model:
        PROVIDERS.get(provider).check_model(model)
    return ModelSpec(provider, model or None)


def provider_of(spec: str | ModelSpec) -> AnyProvider:
    """The backend serving `spec`."""
    return PROVIDERS.get((parse_spec(spec) if isinstance(spec, str) else spec).provider)


def meant(text: str) -> str:
    """` (did you mean 'openai:gpt-4o'?)` for a spec whose provider is missing or misspelt."""
    provider, colon, model = text.partition(":")
    near = closest(provider.lower(), PROVIDERS.names())
    if colon:
        return f" (did you mean '{near}:{model}'?)" if near else ""
    if OPENAI_NAMES.match(text.lower()):
        return f" (did you mean 'openai:{text}'?)"
    if ANTHROPIC_NAMES.match(text.lower()):
        return f" (did you mean 'anthropic:{text}'?)"
    if near and not PROVIDERS.get(near).needs_model:  # `scriptd`; but `llama3` is a model name, not `ollama`
        return f" (did you mean '{near}'?)"
    return f" (a spec is PROVIDER:MODEL: did you mean 'ollama:{text}' or 'openai:{text}'?)"
