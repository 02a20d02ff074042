"""A model backend as one registered object (moot.models.providers lists them), the way a protocol
is one: the name its specs start with (`NAME[:MODEL]`), its `backends.NAME` options, how it builds a
client, what it checks before a run, where it is served from and whether it runs in this process.

The run-time options of every backend (`BackendOptions`) are each backend's own options block,
as the scenario gives it with the command line's endpoints applied, and the API key.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any, Callable, Generic, Mapping, Optional, TypeVar, Union
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field

from moot.errors import MootError
from moot.models.price import Price
from moot.safety.secrets import redact_url, register, url_secrets

if TYPE_CHECKING:
    from autogen_core.models import ChatCompletionClient

O = TypeVar("O", bound=BaseModel)
Addresses = tuple[Optional[str], ...]  # endpoints serving a model; (None,): the default / in-process
Endpoints = Optional[Union[str, Annotated[list[str], Field(min_length=1)]]]


class MissingKey(MootError, ValueError):
    """A model that cannot run as configured (an OpenAI model without a key or a base URL, a local
    model file that is not there): found before anything runs."""


class Options(BaseModel):
    """A backend's options block (`backends.NAME`): unknown keys are errors; each key's docstring
    (below it) is its meaning in the JSON Schema and docs/scenarios.md."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Priced(Options):
    """The options block of a backend whose models cost money: their prices."""

    prices: dict[str, Price] = {}
    """Prices of this backend's models by model name (`gpt-4o-mini: {prompt: 0.15, completion:
    0.60}`, US dollars per million tokens; `batch`: the share a batch API charges, default 0.5), for
    each call's recorded cost and `--max-cost`. `--price` and `--prices FILE` beat them."""


class NoOptions(Options):
    """A backend without options (it has no `backends:` block)."""


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec. `model` is a GGUF path (local), a model name, or a scripted model's script."""

    provider: str
    model: str | None = None

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}" if self.model else self.provider


@dataclass(frozen=True)
class BackendOptions:
    """Each backend's options by name (a backend not named has its defaults) and the API key, which
    is used for requests and never recorded."""

    blocks: Mapping[str, BaseModel] = field(default_factory=dict)
    api_key: Optional[str] = field(default=None, repr=False)

    def of(self, provider: "Provider[O]") -> O:
        given = self.blocks.get(provider.name)
        return given if isinstance(given, provider.options) else provider.options()


Build = Callable[[ModelSpec, Mapping[str, Any], BackendOptions, Optional[str]], "ChatCompletionClient"]


def in_process(options: BackendOptions) -> Addresses:
    return (None,)


def nothing_to_check(spec: ModelSpec, options: BackendOptions) -> None:
    return None


def nothing_public(options: BackendOptions) -> dict[str, Any]:
    return {}


def any_model(model: str) -> None:
    return None


def no_file(spec: ModelSpec) -> Optional[str]:
    return None


@dataclass(frozen=True)
class Provider(Generic[O]):
    """A backend. `client`: the module of its client code, imported on first use (a run loads only
    its own); `endpoint_key`: the options' key naming its endpoints, which `--base-url`-like
    options replace; `batches`: the module of its batch API (`--batch`; its `attach(client,
    batcher)` routes a client's requests into waves: moot.models.backends.openai.batch), if it has one; `local`: it runs in this process, so closed answers are read from its
    likelihoods by default and `model_file` names the file a run's provenance hashes."""

    name: str
    options: type[O]
    client: str
    build: Build
    endpoints: Callable[[BackendOptions], Addresses] = in_process
    preflight: Callable[[ModelSpec, BackendOptions], None] = nothing_to_check
    public: Callable[[BackendOptions], dict[str, Any]] = nothing_public  # what a transcript records
    check_model: Callable[[str], None] = any_model  # a bad model part is a bad spec
    needs_model: bool = False
    endpoint_key: Optional[str] = None
    local: bool = False
    model_file: Callable[[ModelSpec], Optional[str]] = no_file
    batches: Optional[str] = None


def endpoint_list(value: Endpoints) -> tuple[str, ...]:
    """One endpoint or several (a pool serving the same model) as a tuple."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def stored_endpoints(value: Endpoints) -> Endpoints:
    """Endpoints as a record keeps them (run.json, a transcript's scenario copy): credentials masked."""
    if value is None:
        return None
    return redact_url(value) if isinstance(value, str) else [redact_url(v) for v in value]


def configured(value: Endpoints, environment: str) -> Addresses:
    """The endpoints given, else the environment's (`environment`), else (None,): the provider's default."""
    env = os.environ.get(environment)
    return with_secrets_registered(endpoint_list(value) or ((env,) if env else (None,)))


@lru_cache(maxsize=None)
def with_secrets_registered(urls: Addresses) -> Addresses:
    """`urls`, their credentials registered for redaction (once per tuple: this is asked on every call)."""
    for url in urls:
        for secret in url_secrets(url or ""):
            register(secret)
    return urls


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
