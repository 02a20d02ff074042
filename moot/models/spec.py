"""Model spec strings: `provider[:model]`, the one way to name a model everywhere."""

from __future__ import annotations

from dataclasses import dataclass

PROVIDERS = ("local", "openai", "ollama", "scripted")
NEEDS_MODEL = ("openai", "ollama")


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
        raise ValueError(f"unknown model provider {provider!r} in {text!r} (allowed: {', '.join(PROVIDERS)})")
    if provider in NEEDS_MODEL and not model:
        raise ValueError(f"{provider!r} needs a model name, e.g. '{provider}:MODEL'")
    if provider == "scripted" and model:
        from moot.models.scripted import parse_script

        parse_script(model)  # a bad script token is a bad spec, caught at validation time
    return ModelSpec(provider, model or None)
