"""Model spec strings: `provider[:model]`, the one way to name a model everywhere.

A spec that does not parse says what was probably meant: `gpt-4o` -> `openai:gpt-4o`,
`opnai:gpt-4o` -> `openai:gpt-4o`, `llama3` -> `ollama:llama3` or `openai:llama3`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from moot.errors import closest

PROVIDERS = ("local", "openai", "ollama", "scripted")
NEEDS_MODEL = ("openai", "ollama")
OPENAI_NAMES = re.compile(r"^(gpt-|chatgpt|o\d|text-|davinci|babbage)")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec. `model` is a GGUF path (local), a model name, or a verdict script."""

    provider: str
    model: str | None = None

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}" if self.model else self.provider


def parse_spec(text: str) -> ModelSpec:
    """Parse `local`, `local:/m.gguf`, `openai:gpt-4o-mini`, `ollama:llama3`, `scripted[:...]`."""
    provider, _, model = text.strip().partition(":")
    provider = provider.lower()
    if provider not in PROVIDERS:
        raise ValueError(f"unknown model provider {provider!r} in {text!r}{meant(text.strip())} "
                         f"(allowed: {', '.join(PROVIDERS)})")
    if provider in NEEDS_MODEL and not model:
        raise ValueError(f"{provider!r} needs a model name, e.g. '{provider}:MODEL'")
    if provider == "scripted" and model:
        from moot.models.scripted import parse_script

        parse_script(model)  # a bad script token is a bad spec, caught at validation time
    return ModelSpec(provider, model or None)


def meant(text: str) -> str:
    """` (did you mean 'openai:gpt-4o'?)` for a spec whose provider is missing or misspelt."""
    provider, colon, model = text.partition(":")
    near = closest(provider.lower(), PROVIDERS)
    if colon:
        return f" (did you mean '{near}:{model}'?)" if near else ""
    if OPENAI_NAMES.match(text.lower()):
        return f" (did you mean 'openai:{text}'?)"
    if near and near not in NEEDS_MODEL:  # `scriptd`; but `llama3` is a model name, not `ollama`
        return f" (did you mean '{near}'?)"
    return f" (a spec is PROVIDER:MODEL: did you mean 'ollama:{text}' or 'openai:{text}'?)"
