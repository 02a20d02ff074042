"""The OpenAI-compatible backend (`openai:MODEL`): OpenAI, or any server speaking its API."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any, Literal, Mapping, Optional

from pydantic import field_serializer

from moot.models.preflight import check_reachable
from moot.models.provider import (Addresses, BackendOptions, Endpoint, Endpoints, MissingKey, ModelSpec, Priced,
                                  Provider, configured, stored_endpoints)
from moot.safety.secrets import redact_url, register

if TYPE_CHECKING:
    from autogen_core.models import ChatCompletionClient

CLIENT = "moot.models.backends.openai.client"


class OpenAIBackend(Priced):
    """The OpenAI-compatible backend (`openai:MODEL`)."""

    base_url: Endpoints = None
    """Server URL of a compatible server, or a list of URLs serving the same model (each call goes
    to the least busy); null means `$OPENAI_BASE_URL`, else OpenAI. `--base-url` beats it. User info
    (`https://user:password@host/v1`) is sent as HTTP basic auth in place of the API key, query
    parameters with every request; both are masked wherever the URL is recorded."""
    api_key_env: str = "OPENAI_API_KEY"
    """The environment variable holding the API key (keys are never written in scenarios or
    transcripts)."""
    kind: Literal["auto", "base", "instruct"] = "auto"
    """`base`: the server serves a base model (vLLM, llama.cpp's servers): every role continues a
    document through the completions endpoint (`/v1/completions`) with the document form's stops,
    and closed answers are read from its log-probabilities; `auto` / `instruct`: a chat model."""
    server: Literal["any", "llama-server"] = "any"
    """`llama-server`: the endpoint is llama.cpp's llama-server (or a server taking its request
    fields): every generation carries the embedded model's sampling (top-k, min-p, repeat penalty,
    its seed mixed with the prompt's tokens), and a document turn its rules (no newline or name
    first, a minimum length, a whole sentence, no copied runs), so its turns match in-process
    ones. `any`: only OpenAI's fields are sent (OpenAI rejects the others)."""

    _stored = field_serializer("base_url", when_used="json")(lambda self, value: stored_endpoints(value))


def endpoints(options: BackendOptions) -> Addresses:
    return configured(options.of(OPENAI).base_url, "OPENAI_BASE_URL")


def api_key(options: BackendOptions) -> str:
    """The key given, else the environment's (`api_key_env`); a compatible server at a base URL needs none."""
    key = options.api_key or os.environ.get(options.of(OPENAI).api_key_env)
    if not key and endpoints(options) != (None,):
        key = "not-needed"  # local OpenAI-compatible servers ignore the key
    if not key:
        raise MissingKey("openai backend needs an API key: set OPENAI_API_KEY (or the scenario's "
                         "backends.openai.api_key_env) or pass --api-key, or --base-url for an "
                         "OpenAI-compatible server")
    register(key)
    return key


def build(spec: ModelSpec, settings: Mapping[str, Any], options: BackendOptions,
          address: Optional[str]) -> ChatCompletionClient:
    """User info in the URL is sent as HTTP basic auth, in place of the bearer key (a request has
    one Authorization header); its query parameters go with every request."""
    assert spec.model is not None  # needs_model
    endpoint = Endpoint.of(address or endpoints(options)[0])
    client: ChatCompletionClient = importlib.import_module(CLIENT).OpenAIClient(
        spec.model, api_key(options), endpoint.url, settings, headers=endpoint.basic_header(), query=endpoint.query,
        kind=options.of(OPENAI).kind, server=options.of(OPENAI).server)
    return client


def preflight(spec: ModelSpec, options: BackendOptions) -> None:
    api_key(options)
    for url in endpoints(options):
        check_reachable(url, "OpenAI-compatible endpoint")


def public(options: BackendOptions) -> dict[str, Any]:
    return {"openai_base_urls": [redact_url(u) for u in endpoints(options) if u]}


OPENAI = Provider("openai", OpenAIBackend, CLIENT, build, endpoints, preflight, public, needs_model=True,
                  endpoint_key="base_url", batches="moot.models.backends.openai.batch")
