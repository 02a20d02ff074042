"""Build a ChatCompletionClient from a spec string, generation settings and backend options, each
through the backend its spec names (moot.models.providers)."""

from __future__ import annotations

import importlib
from typing import Any, Iterable, Mapping, Optional

from autogen_core.models import ChatCompletionClient

from moot.models.provider import Addresses, BackendOptions, ModelSpec
from moot.models.providers import PROVIDERS
from moot.models.spec import parse_spec, provider_of


def endpoints_of(spec: str | ModelSpec, options: BackendOptions) -> Addresses:
    """The endpoints that can serve `spec` (None: the provider's default / in-process)."""
    return provider_of(spec).endpoints(options)


def build_client(spec: str | ModelSpec, settings: Mapping[str, Any],
                 options: BackendOptions = BackendOptions(), address: Optional[str] = None) -> ChatCompletionClient:
    """The client for `spec` at `address` (an endpoint of endpoints_of), max_tokens bounded by `settings`."""
    spec = parse_spec(spec) if isinstance(spec, str) else spec
    return provider_of(spec).build(spec, settings, options, address)


def preflight(specs: Iterable[str], options: BackendOptions) -> None:
    """Each model's backend checks what it can before a run starts (a key, a file, a server)."""
    for spec in sorted(set(map(parse_spec, specs)), key=str):
        provider_of(spec).preflight(spec, options)


def load_backends(specs: Iterable[str]) -> None:
    """Import these models' client code now (the openai SDK takes ~0.4 s), as part of start-up
    rather than inside a run's first call (moot.cli.heap)."""
    for provider in {provider_of(s) for s in specs}:
        importlib.import_module(provider.client)


def public(options: BackendOptions) -> dict[str, Any]:
    """What may be written to a transcript: each backend's endpoints (without credentials), never keys."""
    return {key: value for provider in PROVIDERS.all() for key, value in provider.public(options).items()}
