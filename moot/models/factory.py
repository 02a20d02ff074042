"""Build a ChatCompletionClient from a spec string, generation settings and backend options."""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Mapping, Optional
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from autogen_core.models import ChatCompletionClient

from moot.models.base import GENERIC_INFO
from moot.models.spec import ModelSpec, parse_spec
from moot.safety.secrets import register


class MissingKey(ValueError):
    """An OpenAI model without an API key or a base URL: found before anything runs."""


@dataclass(frozen=True)
class BackendOptions:
    """Where remote backends live. The API key is used for requests and never recorded.

    `openai_base_urls` / `ollama_hosts`: one endpoint, or several serving the same model (each
    call goes to the least busy). Empty: the environment's (OPENAI_BASE_URL, OLLAMA_HOST), else
    the provider's default."""

    openai_base_urls: tuple[str, ...] = ()
    openai_api_key: Optional[str] = None
    ollama_hosts: tuple[str, ...] = ()
    local_n_ctx: int = 8192
    local_n_threads: Optional[int] = None
    local_n_gpu_layers: int = 0
    local_kind: str = "auto"
    openai_kind: str = "auto"  # `base`: the server serves a base model (documents, /v1/completions)
    ollama_kind: str = "auto"  # `base`: Ollama serves a base model (documents, generate in raw mode)

    def openai_endpoints(self) -> tuple[Optional[str], ...]:
        env = os.environ.get("OPENAI_BASE_URL")
        return with_secrets_registered(self.openai_base_urls or ((env,) if env else (None,)))

    def ollama_endpoints(self) -> tuple[Optional[str], ...]:
        env = os.environ.get("OLLAMA_HOST")
        return with_secrets_registered(self.ollama_hosts or ((env,) if env else (None,)))

    def openai_key(self) -> str:
        key = self.openai_api_key or os.environ.get("OPENAI_API_KEY")
        if not key and self.openai_endpoints() != (None,):
            key = "not-needed"  # local OpenAI-compatible servers ignore the key
        if not key:
            raise MissingKey("openai backend needs an API key: set OPENAI_API_KEY (or the scenario's "
                             "backends.openai.api_key_env) or pass --api-key, or --base-url for an "
                             "OpenAI-compatible server")
        register(key)
        return key

    def public(self) -> dict[str, Any]:
        """What may be written to a transcript: endpoints (without credentials), never keys."""
        return {"openai_base_urls": [public_url(u) for u in self.openai_endpoints() if u],
                "ollama_hosts": [public_url(h) for h in self.ollama_endpoints() if h],
                "local_n_ctx": self.local_n_ctx}


def url_secrets(url: str) -> list[str]:
    """Credentials an endpoint URL may carry: `user:password@`, `?api-key=...` values."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    return [s for s in (parts.password, *(v for _, v in parse_qsl(parts.query))) if s]


@lru_cache(maxsize=None)
def with_secrets_registered(urls: tuple[Optional[str], ...]) -> tuple[Optional[str], ...]:
    """`urls`, their credentials registered for redaction (once per tuple: this is asked on every call)."""
    for url in urls:
        for secret in url_secrets(url or ""):
            register(secret)
    return urls


def public_url(url: str) -> str:
    """`url` without its user, password and query (where credentials go)."""
    bare = "://" not in url  # an Ollama host may be `host:port`
    parts = urlsplit(f"http://{url}" if bare else url)
    clean = urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, "", ""))
    return clean.removeprefix("http://") if bare else clean


def endpoints_of(spec: str | ModelSpec, options: BackendOptions) -> tuple[Optional[str], ...]:
    """The endpoints that can serve `spec` (None: the provider's default / in-process)."""
    provider = (parse_spec(spec) if isinstance(spec, str) else spec).provider
    if provider == "openai":
        return options.openai_endpoints()
    if provider == "ollama":
        return options.ollama_endpoints()
    return (None,)


def build_client(spec: str | ModelSpec, settings: Mapping[str, Any],
                 options: BackendOptions = BackendOptions(), address: Optional[str] = None) -> ChatCompletionClient:
    """The client for `spec` at `address` (an endpoint of endpoints_of), max_tokens bounded by `settings`."""
    spec = parse_spec(spec) if isinstance(spec, str) else spec
    if spec.provider == "scripted":
        scripted = backend("scripted")
        return scripted.ScriptedChatCompletionClient(scripted.parse_script(spec.model), record=False,
                                                     max_tokens=int(settings.get("max_tokens") or 256))
    if spec.provider == "local":
        local = backend("local")
        path = spec.model or local.default_model_path()
        if not os.path.isfile(path):
            raise ValueError(f"local model file not found: {path}")
        return local.LocalChatCompletionClient(path, settings, options.local_n_ctx, options.local_n_threads,
                                               options.local_n_gpu_layers, options.local_kind)
    if spec.provider == "openai":
        return _openai(spec.model, settings, options, address or options.openai_endpoints()[0])
    return _ollama(spec.model, settings, address or options.ollama_endpoints()[0], options.ollama_kind)


BACKEND_MODULES = {"scripted": "moot.models.scripted", "local": "moot.models.local",
                   "openai": "moot.models.openai_client", "ollama": "moot.models.ollama_client"}


def backend(provider: str) -> Any:
    """The module of `provider`'s client code, imported on first use (a run loads only its own)."""
    return importlib.import_module(BACKEND_MODULES[provider])


def load_backends(specs: Iterable[str]) -> None:
    """Import these models' client code now (the openai SDK takes ~0.4 s), as part of start-up
    rather than inside a run's first call (moot.cli.heap)."""
    for provider in {parse_spec(s).provider for s in specs}:
        backend(provider)


def _openai(model: str, settings: Mapping[str, Any], options: BackendOptions,
            base_url: Optional[str]) -> ChatCompletionClient:
    return backend("openai").OpenAIClient(model, options.openai_key(), base_url, settings, options.openai_kind)


def _ollama(model: str, settings: Mapping[str, Any], host: Optional[str], kind: str = "auto") -> ChatCompletionClient:
    client = backend("ollama").OllamaClient
    register(os.environ.get("OLLAMA_API_KEY"))  # the ollama library sends it; a server may echo it
    ollama_options = {"temperature": settings.get("temperature"), "num_predict": settings.get("max_tokens"),
                      "seed": settings.get("seed"), "top_p": settings.get("top_p"),
                      "repeat_penalty": settings.get("repeat_penalty")}
    made = client(model=model, host=host, model_info=GENERIC_INFO,
                  options={k: v for k, v in ollama_options.items() if v is not None})
    made.model_kind = "base" if kind == "base" else "instruct"
    return made
