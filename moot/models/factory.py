"""Build a ChatCompletionClient from a spec string, generation settings and backend options."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from autogen_core.models import ChatCompletionClient, ModelInfo

from moot.models.spec import ModelSpec, parse_spec

GENERIC_INFO = ModelInfo(vision=False, function_calling=False, json_output=True,
                         structured_output=True, family="unknown")


@dataclass(frozen=True)
class BackendOptions:
    """Where remote backends live. The API key is used for requests and never recorded."""

    openai_base_url: Optional[str] = None
    openai_api_key: Optional[str] = None
    ollama_host: Optional[str] = None
    local_n_ctx: int = 8192
    local_n_threads: Optional[int] = None

    def resolved_openai(self) -> tuple[Optional[str], str]:
        base = self.openai_base_url or os.environ.get("OPENAI_BASE_URL")
        key = self.openai_api_key or os.environ.get("OPENAI_API_KEY")
        if not key and base:
            key = "not-needed"  # local OpenAI-compatible servers ignore the key
        if not key:
            raise ValueError("openai backend needs an API key: set OPENAI_API_KEY or pass --api-key "
                             "(or --base-url for a local OpenAI-compatible server)")
        return base, key

    def public(self) -> dict[str, Any]:
        """What may be written to a transcript: endpoints, never keys."""
        base = self.openai_base_url or os.environ.get("OPENAI_BASE_URL")
        host = self.ollama_host or os.environ.get("OLLAMA_HOST")
        return {"openai_base_url": base, "ollama_host": host, "local_n_ctx": self.local_n_ctx}


def build_client(spec: str | ModelSpec, settings: Mapping[str, Any],
                 options: BackendOptions = BackendOptions()) -> ChatCompletionClient:
    """The client for `spec`, with max_tokens always bounded by `settings`."""
    spec = parse_spec(spec) if isinstance(spec, str) else spec
    if spec.provider == "scripted":
        from moot.models.scripted import ScriptedChatCompletionClient, parse_script

        return ScriptedChatCompletionClient(parse_script(spec.model))
    if spec.provider == "local":
        from moot.models.local import LocalChatCompletionClient, default_model_path

        path = spec.model or default_model_path()
        if not os.path.isfile(path):
            raise ValueError(f"local model file not found: {path}")
        return LocalChatCompletionClient(path, settings, options.local_n_ctx, options.local_n_threads)
    if spec.provider == "openai":
        return _openai(spec.model, settings, options)
    return _ollama(spec.model, settings, options)


def _openai(model: str, settings: Mapping[str, Any], options: BackendOptions) -> ChatCompletionClient:
    from moot.models.remote import OpenAIClient

    base_url, api_key = options.resolved_openai()
    kwargs: dict[str, Any] = {k: settings[k] for k in ("temperature", "max_tokens", "seed", "top_p")
                              if settings.get(k) is not None}
    if base_url:
        kwargs["base_url"] = base_url
        kwargs["model_info"] = GENERIC_INFO  # any model name on a compatible server
    # Our own retry policy governs; the SDK must not retry behind our back.
    return OpenAIClient(model=model, api_key=api_key, max_retries=0, **kwargs)


def _ollama(model: str, settings: Mapping[str, Any], options: BackendOptions) -> ChatCompletionClient:
    from moot.models.remote import OllamaClient

    ollama_options = {"temperature": settings.get("temperature"), "num_predict": settings.get("max_tokens"),
                      "seed": settings.get("seed"), "top_p": settings.get("top_p"),
                      "repeat_penalty": settings.get("repeat_penalty")}
    host = options.ollama_host or os.environ.get("OLLAMA_HOST")
    return OllamaClient(
        model=model, host=host, model_info=GENERIC_INFO,
        options={k: v for k, v in ollama_options.items() if v is not None},
    )
