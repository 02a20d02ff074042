"""Build a ChatCompletionClient from a spec string, generation settings and backend options."""

from __future__ import annotations

import base64
import importlib
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from autogen_core.models import ChatCompletionClient

from moot.models.base import GENERIC_INFO
from moot.models.extra_buffers import Setting
from moot.models.spec import ModelSpec, parse_spec
from moot.safety.secrets import redact_url, register, url_secrets
from moot.errors import MootError

if TYPE_CHECKING:
    from moot.models.local_process import LocalConfig
    from moot.models.ollama_client import OllamaClient  # imported when used: a backend's import is slow


class MissingKey(MootError, ValueError):
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
    local_extra_buffers: Setting = "auto"  # llama.cpp's extra buffer types: auto | on | off (moot.models.extra_buffers)
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
        return {"openai_base_urls": [redact_url(u) for u in self.openai_endpoints() if u],
                "ollama_hosts": [redact_url(h) for h in self.ollama_endpoints() if h],
                "local_n_ctx": self.local_n_ctx}


@lru_cache(maxsize=None)
def with_secrets_registered(urls: tuple[Optional[str], ...]) -> tuple[Optional[str], ...]:
    """`urls`, their credentials registered for redaction (once per tuple: this is asked on every call)."""
    for url in urls:
        for secret in url_secrets(url or ""):
            register(secret)
    return urls


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
        client: ChatCompletionClient = scripted.ScriptedChatCompletionClient(
            scripted.parse_script(spec.model), record=False, max_tokens=int(settings.get("max_tokens") or 256))
        return client
    if spec.provider == "local":
        client = backend("local").LocalChatCompletionClient(local_config(spec, options), settings, options.local_kind)
        return client
    assert spec.model is not None  # parse_spec: openai and ollama need a model (NEEDS_MODEL)
    if spec.provider == "openai":
        return _openai(spec.model, settings, options, address or options.openai_endpoints()[0])
    return _ollama(spec.model, settings, address or options.ollama_endpoints()[0], options.ollama_kind)


BACKEND_MODULES = {"scripted": "moot.models.scripted", "local": "moot.models.local",
                   "openai": "moot.models.openai_client", "ollama": "moot.models.ollama_client"}


def backend(provider: str) -> Any:
    """The module of `provider`'s client code, imported on first use (a run loads only its own)."""
    return importlib.import_module(BACKEND_MODULES[provider])


def local_config(spec: ModelSpec, options: BackendOptions) -> LocalConfig:
    """What the embedded model's process for `spec` is started with."""
    from moot.models.local_process import LocalConfig

    path = spec.model or backend("local").default_model_path()
    if not os.path.isfile(path):
        raise ValueError(f"local model file not found: {path}")
    return LocalConfig(path, options.local_n_ctx, options.local_n_threads, options.local_n_gpu_layers,
                       options.local_extra_buffers)


def load_backends(specs: Iterable[str]) -> None:
    """Import these models' client code now (the openai SDK takes ~0.4 s), as part of start-up
    rather than inside a run's first call (moot.cli.heap)."""
    for provider in {parse_spec(s).provider for s in specs}:
        backend(provider)


@dataclass(frozen=True)
class Endpoint:
    """An endpoint URL taken apart the way a server expects its credentials: the URL without them,
    its user info as HTTP basic auth (user, password), its query parameters sent with every request."""

    url: Optional[str]
    basic_auth: Optional[tuple[str, str]] = None
    query: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, url: Optional[str]) -> "Endpoint":
        if not url:
            return cls(url)
        bare = "://" not in url  # an Ollama host may be `host:port`
        parts = urlsplit(f"http://{url}" if bare else url)
        auth = (unquote(parts.username or ""), unquote(parts.password or "")) if "@" in parts.netloc else None
        clean = urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, "", ""))
        return cls(clean.removeprefix("http://") if bare else clean, auth, dict(parse_qsl(parts.query)))

    def basic_header(self) -> dict[str, str]:
        """{"Authorization": "Basic ..."} for the user info, if there is any."""
        if self.basic_auth is None:
            return {}
        return {"Authorization": "Basic " + base64.b64encode(":".join(self.basic_auth).encode("utf-8")).decode("ascii")}


def _openai(model: str, settings: Mapping[str, Any], options: BackendOptions,
            base_url: Optional[str]) -> ChatCompletionClient:
    """User info in the URL is sent as HTTP basic auth, in place of the bearer key (a request has
    one Authorization header); its query parameters go with every request."""
    endpoint = Endpoint.of(base_url)
    client: ChatCompletionClient = backend("openai").OpenAIClient(
        model, options.openai_key(), endpoint.url, settings, headers=endpoint.basic_header(), query=endpoint.query,
        kind=options.openai_kind)
    return client


def _ollama(model: str, settings: Mapping[str, Any], host: Optional[str], kind: str = "auto") -> ChatCompletionClient:
    """User info in the host is sent as HTTP basic auth, its query parameters with every request
    (the ollama library would drop both)."""
    endpoint = Endpoint.of(host)
    client = backend("ollama").OllamaClient
    register(os.environ.get("OLLAMA_API_KEY"))  # the ollama library sends it; a server may echo it
    ollama_options = {"temperature": settings.get("temperature"), "num_predict": settings.get("max_tokens"),
                      "seed": settings.get("seed"), "top_p": settings.get("top_p"),
                      "repeat_penalty": settings.get("repeat_penalty")}
    made: OllamaClient = client(model=model, host=endpoint.url, model_info=GENERIC_INFO,
                  options={k: v for k, v in ollama_options.items() if v is not None},
                  auth=endpoint.basic_auth, params=endpoint.query)
    made.model_kind = "base" if kind == "base" else "instruct"
    return made
