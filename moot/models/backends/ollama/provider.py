"""The Ollama backend (`ollama:MODEL`)."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any, Literal, Mapping, Optional

from pydantic import field_serializer

from moot.models.base import GENERIC_INFO
from moot.models.preflight import check_reachable
from moot.models.provider import (Addresses, BackendOptions, Endpoint, Endpoints, ModelSpec, Priced, Provider,
                                  configured, stored_endpoints)
from moot.safety.secrets import redact_url, register

if TYPE_CHECKING:
    from autogen_core.models import ChatCompletionClient

CLIENT = "moot.models.backends.ollama.client"
DEFAULT_HOST = "http://127.0.0.1:11434"


class OllamaBackend(Priced):
    """The Ollama backend (`ollama:MODEL`)."""

    host: Endpoints = None
    """Ollama server, or a list of servers serving the same model (each call goes to the least
    busy); null means `$OLLAMA_HOST`, else Ollama's default. `--ollama-host` beats it. User info is
    sent as HTTP basic auth, query parameters with every request; both are masked where recorded."""

    kind: Literal["auto", "base", "instruct"] = "auto"
    """`base`: Ollama serves a base model: every role continues a document through its generate
    endpoint in raw mode, and closed answers are read from its log-probabilities; `auto` /
    `instruct`: a chat model."""

    _stored = field_serializer("host", when_used="json")(lambda self, value: stored_endpoints(value))


def endpoints(options: BackendOptions) -> Addresses:
    return configured(options.of(OLLAMA).host, "OLLAMA_HOST")


def build(spec: ModelSpec, settings: Mapping[str, Any], options: BackendOptions,
          address: Optional[str]) -> ChatCompletionClient:
    """User info in the host is sent as HTTP basic auth, its query parameters with every request
    (the ollama library would drop both)."""
    endpoint = Endpoint.of(address or endpoints(options)[0])
    register(os.environ.get("OLLAMA_API_KEY"))  # the ollama library sends it; a server may echo it
    ollama_options = {"temperature": settings.get("temperature"), "num_predict": settings.get("max_tokens"),
                      "seed": settings.get("seed"), "top_p": settings.get("top_p"),
                      "repeat_penalty": settings.get("repeat_penalty")}
    made = importlib.import_module(CLIENT).OllamaClient(
        model=spec.model, host=endpoint.url, model_info=GENERIC_INFO,
        options={k: v for k, v in ollama_options.items() if v is not None}, auth=endpoint.basic_auth,
        params=endpoint.query)
    made.model_kind = "base" if options.of(OLLAMA).kind == "base" else "instruct"
    client: ChatCompletionClient = made
    return client


def preflight(spec: ModelSpec, options: BackendOptions) -> None:
    for url in endpoints(options):
        check_reachable(url or DEFAULT_HOST, "Ollama server")


def public(options: BackendOptions) -> dict[str, Any]:
    return {"ollama_hosts": [redact_url(h) for h in endpoints(options) if h]}


OLLAMA = Provider("ollama", OllamaBackend, CLIENT, build, endpoints, preflight, public, needs_model=True,
                  endpoint_key="host")
