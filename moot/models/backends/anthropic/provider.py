"""The Anthropic backend (`anthropic:MODEL`): Claude through the Messages API (and its Message Batches
for `--batch`), or any server speaking it."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any, Mapping, Optional

from pydantic import field_serializer

from moot.models.preflight import check_reachable
from moot.models.provider import (Addresses, BackendOptions, Endpoint, Endpoints, MissingKey, ModelSpec, Priced,
                                  Provider, configured, stored_endpoints)
from moot.safety.secrets import redact_url, register

if TYPE_CHECKING:
    from autogen_core.models import ChatCompletionClient

CLIENT = "moot.models.backends.anthropic.client"
DEFAULT_URL = "https://api.anthropic.com"


class AnthropicBackend(Priced):
    """The Anthropic backend (`anthropic:MODEL`)."""

    base_url: Endpoints = None
    """Server URL (`https://api.anthropic.com`; with or without `/v1`: requests go to its
    `/v1/messages`), or a list of URLs serving the same model (each call goes to the least busy);
    null means `$ANTHROPIC_BASE_URL`, else Anthropic. User info is sent as HTTP basic auth, query
    parameters with every request; both are masked wherever the URL is recorded."""
    api_key_env: str = "ANTHROPIC_API_KEY"
    """The environment variable holding the API key, sent as `x-api-key` (keys are never written in
    scenarios or transcripts, and `--api-key` is OpenAI's)."""

    _stored = field_serializer("base_url", when_used="json")(lambda self, value: stored_endpoints(value))


def endpoints(options: BackendOptions) -> Addresses:
    return configured(options.of(ANTHROPIC).base_url, "ANTHROPIC_BASE_URL")


def api_key(options: BackendOptions) -> Optional[str]:
    """The environment's key (`api_key_env`); a server at a base URL of one's own may need none."""
    key = os.environ.get(options.of(ANTHROPIC).api_key_env)
    if not key and endpoints(options) == (None,):
        raise MissingKey(f"anthropic backend needs an API key: set {options.of(ANTHROPIC).api_key_env} (or the "
                         "scenario's backends.anthropic.api_key_env), or a backends.anthropic.base_url of a "
                         "server speaking the Messages API")
    register(key)
    return key or None


def messages_url(base: str) -> str:
    """The Messages endpoint of a base URL given with or without its `/v1`."""
    base = base.rstrip("/")
    return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"


def build(spec: ModelSpec, settings: Mapping[str, Any], options: BackendOptions,
          address: Optional[str]) -> ChatCompletionClient:
    assert spec.model is not None  # needs_model
    endpoint = Endpoint.of(address or endpoints(options)[0] or DEFAULT_URL)
    assert endpoint.url is not None
    client: ChatCompletionClient = importlib.import_module(CLIENT).AnthropicClient(
        spec.model, api_key(options), messages_url(endpoint.url), settings, headers=endpoint.basic_header(),
        query=endpoint.query)
    return client


def preflight(spec: ModelSpec, options: BackendOptions) -> None:
    api_key(options)
    for url in endpoints(options):
        check_reachable(url, "Anthropic Messages API endpoint")


def public(options: BackendOptions) -> dict[str, Any]:
    return {"anthropic_base_urls": [redact_url(u) for u in endpoints(options) if u]}


ANTHROPIC = Provider("anthropic", AnthropicBackend, CLIENT, build, endpoints, preflight, public, needs_model=True,
                     endpoint_key="base_url", batches="moot.models.backends.anthropic.batch")
