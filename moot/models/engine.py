"""The one way moot calls a model: reply cache, a concurrency bound per backend, retries, usage.

Every protocol (conferences included) asks through a ModelEngine shared by all units of a run:

- the reply cache is keyed by model spec, generation settings, every message and the output
  schema, so a finished call is never sent twice (a rerun or a resume answers from it);
- each backend endpoint has its own bound on calls in flight, adapted to its answers (fewer on
  429s and timeouts, more as answers return, up to `concurrency`: moot.models.pace); a model served by several
  endpoints (a list of base URLs or Ollama hosts) sends each call to the least busy one; an
  endpoint's first call goes alone, and one that refuses the credentials (401/403) is sent no
  more calls (Endpoint);
- retries, backoff and fatal errors are moot.models.calls';
- the same call asked twice at once is sent once: the second waits for the first's reply;
- counters: backend calls, cache hits and tokens, for progress lines and summaries.

A call may carry a request beyond a chat reply (moot.models.requests: a continuation, a closed
choice, a score): it is part of the cache key and reaches the client in `extra_create_args`, so
every kind is cached, bounded, retried and counted the same way; what it measured comes back in
`CallResult.detail`. A client that `plays_along` (the scripted one) is also told the answer
form the protocol declared for the call (moot.models.expect); no other client sees it. `on_text` receives a reply's text as it is generated, from clients that
stream (`streams = True`: the embedded model); a retried call streams again from its start. An
`on_text` that only watches (moot.models.streaming.Watcher) is served by in-process models only.

With a Batcher (`--batch`) a model whose backend has a batch API sends its calls in waves
(moot.models.batch): no bound on calls in flight and no lone first call (a wave is one request to
the provider), everything else (cache, retries, counters, cost) as above.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, AsyncIterator, Callable, Mapping, Optional, Sequence

from autogen_core import CancellationToken
from autogen_core.models import ChatCompletionClient, CreateResult, LLMMessage
from pydantic import BaseModel

from moot.models.batch import Batcher, BatchStats
from moot.models.cache import CachedReply, NoCache, ReplyCache, cache_key
from moot.models.calls import Creates, FatalModelError, RetryPolicy, complete
from moot.models.expect import EXPECTED_ARG, Expected
from moot.models.factory import build_client, endpoints_of
from moot.models.bounded import DEFAULT_TOKEN_LIMIT
from moot.models.budget import Budget
from moot.models.pace import Pace
from moot.models.prices import Prices
from moot.models.structured import structured_max_tokens
from moot.models.provider import BackendOptions
from moot.models.requests import REQUEST_ARG, Request
from moot.models.providers import PROVIDERS
from moot.models.spec import provider_of
from moot.models.streaming import Watcher, final_of
from moot.safety.secrets import redact_url
from moot.tracing import traced_call

REFUSED_STATUS = frozenset({401, 403})  # the endpoint refuses the credentials: no call to it can succeed
BATCH_SLOTS = 1_000_000  # batched calls wait in their wave, not for a connection


@dataclass(frozen=True)
class RoleModel:
    """The model playing a role: its spec string and generation settings."""

    spec: str
    settings: Mapping[str, Any] = field(default_factory=dict)

    @cached_property
    def settings_key(self) -> tuple[tuple[str, str], ...]:
        """The settings as a key (computed once: every call of the role asks for it)."""
        return tuple(sorted((k, str(v)) for k, v in self.settings.items()))


@dataclass
class EngineStats:
    backend_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0  # US dollars this invocation spent (priced models)
    paces: list[Pace] = field(default_factory=list)  # each endpoint's (moot.models.pace)
    batch: Optional[BatchStats] = None  # waves and batches, with --batch

    @property
    def pace(self) -> str:
        """`pace=12/32` while an endpoint sends fewer calls than it may (the lowest), else ""."""
        slowed = [p for p in self.paces if p.adapted]
        return f"pace={min(slowed, key=lambda p: p.current).text()}" if slowed else ""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class CallResult:
    """A reply and how it was obtained."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    attempts: int
    cached: bool
    key: str
    finish_reason: Optional[str] = None
    detail: Optional[dict[str, Any]] = None
    cost_usd: Optional[float] = None  # what it cost (None: a model without a price; a cached reply: 0)


@dataclass
class Endpoint:
    """One place calls go: its pace (a bound on calls in flight) and how many are queued or running.

    Its first call goes alone: the others wait until an endpoint has answered once, so a bad key
    costs one request, not one per slot. Once it refuses the credentials (HTTP 401/403) no call
    still queued for it is sent: each fails at once with the same cause."""

    address: Optional[str]
    pace: Pace
    load: int = 0
    answered: bool = False
    refused: Optional[FatalModelError] = None
    probe: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def admit(self) -> bool:
        """Wait for this call's turn; True when it is the endpoint's probe (it holds `probe` and
        must `settle`). Raises the endpoint's refusal instead of sending."""
        self.check()
        if self.answered:
            return False
        await self.probe.acquire()
        if self.answered or self.refused is not None:
            self.probe.release()
            self.check()
            return False
        return True

    @asynccontextmanager
    async def attempt(self) -> AsyncIterator[None]:
        """A request's place in the endpoint's pace (moot.models.calls.Paced); once the endpoint
        refused the credentials, a call that waited for its place fails instead of being sent."""
        async with self.pace.attempt():
            self.check()
            yield

    def first_to_wait(self) -> bool:
        return self.pace.first_to_wait()

    def check(self) -> None:
        if self.refused is not None:
            raise FatalModelError(self.refused.cause, 0, self.refused.status)

    def settle(self, probing: bool, error: Optional[BaseException]) -> None:
        """What a call sent here tells of the endpoint; ends its probe."""
        if error is None:
            self.answered = True
        elif isinstance(error, FatalModelError) and error.status in REFUSED_STATUS:
            self.refused = error
        if probing:
            self.probe.release()


class ModelEngine:
    """Shared by every unit of a run. `clients` may hold ready clients by role or spec (tests)."""

    def __init__(self, options: BackendOptions = BackendOptions(), *, cache: ReplyCache | NoCache | None = None,
                 retry: RetryPolicy = RetryPolicy(), concurrency: int = 4,
                 clients: Optional[Mapping[str, ChatCompletionClient]] = None,
                 prices: Prices = Prices(), budget: Optional[Budget] = None, batcher: Optional[Batcher] = None):
        """`prices`: each call's cost (moot.models.prices); `budget`: the spend a cost limit allows;
        `batcher`: --batch's waves."""
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.options, self.retry, self.concurrency = options, retry, concurrency
        self.cache = cache if cache is not None else NoCache()
        self.batcher = batcher
        self.stats = EngineStats(batch=batcher.stats if batcher is not None else None)
        self.prices, self.budget = prices, budget or Budget()
        self._given = dict(clients or {})
        self._clients: dict[tuple[str, tuple[tuple[str, str], ...], Optional[str]], ChatCompletionClient] = {}
        self._endpoints: dict[tuple[str, Optional[str]], Endpoint] = {}
        self._serving: dict[str, list[Endpoint]] = {}  # by model spec
        self._pending: dict[str, asyncio.Future[None]] = {}

    def serving(self, spec: str) -> list[Endpoint]:
        """The endpoints serving `spec` (a local or scripted model has one), found once per spec."""
        found = self._serving.get(spec)
        if found is None:
            provider = spec.partition(":")[0]
            found = self._serving[spec] = [
                self._endpoint(provider, address) for address in endpoints_of(spec, self.options)]
        return found

    def _endpoint(self, provider: str, address: Optional[str]) -> Endpoint:
        found = self._endpoints.get((provider, address))
        if found is None:
            batched = self.batcher is not None and PROVIDERS.get(provider).batches is not None
            pace = Pace(BATCH_SLOTS if batched else self.concurrency,
                        f"{provider} {redact_url(address)}" if address else provider)
            found = self._endpoints[provider, address] = Endpoint(address, pace, answered=batched)
            if not batched:
                self.stats.paces.append(pace)
        return found

    def batched(self, spec: str) -> bool:
        """Whether `spec`'s calls go in waves (--batch, and its backend has a batch API)."""
        return self.batcher is not None and provider_of(spec).batches is not None

    def unit(self) -> AbstractContextManager[None]:
        """Around one unit's run (moot.engine.runner): with --batch, a wave waits for it."""
        return self.batcher.unit() if self.batcher is not None else nullcontext()

    def endpoint(self, spec: str) -> Endpoint:
        """The least busy endpoint serving `spec`."""
        choices = self.serving(spec)
        return choices[0] if len(choices) == 1 else min(choices, key=lambda e: e.load)

    def client(self, model: RoleModel, address: Optional[str] = None, role: str = "") -> ChatCompletionClient:
        given = self._given.get(role) or self._given.get(model.spec)
        if given is not None:
            return given
        key = (model.spec, model.settings_key, address)
        if key not in self._clients:
            client = self._clients[key] = build_client(model.spec, model.settings, self.options, address)
            if self.batcher is not None and self.batched(model.spec):
                importlib.import_module(str(provider_of(model.spec).batches)).attach(client, self.batcher)
        return self._clients[key]

    def model_kind(self, model: RoleModel, role: str = "") -> str:
        """'base' or 'instruct': how the model is best prompted (a transcript document to continue,
        or a chat). Models behind a server count as instruction models."""
        return getattr(self.client(model, self.serving(model.spec)[0].address, role), "model_kind", "instruct")

    @traced_call
    async def ask(self, model: RoleModel, messages: Sequence[LLMMessage],
                  output: Optional[type[BaseModel]] = None, *, request: Optional[Request] = None,
                  role: str = "", key: Optional[str] = None,
                  cancellation_token: Optional[CancellationToken] = None,
                  on_text: Optional[Callable[[str], None]] = None, expected: Optional[Expected] = None) -> CallResult:
        """The reply to `messages` (and `request`): from the cache, or sent within its endpoint's
        bound. `key`: the call's cache key when the caller has computed it already; `expected`: the
        answer form its protocol declared (for a client that plays along). Raises
        NotSupported when the model's backend cannot answer `request`."""
        asked = request.as_dict() if request is not None else None
        key = key or cache_key(model.spec, model.settings, messages, output, asked)
        started = time.monotonic()
        while True:  # the same call already in flight (another unit): wait for its reply
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                return CallResult(hit.text, hit.prompt_tokens, hit.completion_tokens,
                                  time.monotonic() - started, 0, True, key, detail=hit.detail, cost_usd=0.0)
            pending = self._pending.get(key)
            if pending is None:
                break
            await asyncio.shield(pending)  # then the cache has it, or (it failed) we send it ourselves
        self._pending[key] = signal = asyncio.get_running_loop().create_future()
        endpoint = self.endpoint(model.spec)
        endpoint.load += 1
        try:
            price, batched = self.prices.of(model.spec, self.options), self.batched(model.spec)
            held = self.budget.reserve(price, messages, token_bound(model, request, output), batched) if price else 0.0
            probing = await endpoint.admit()
            try:
                self.stats.backend_calls += 1
                chat = self.client(model, endpoint.address, role)
                client: Creates = Streamed(chat, on_text) if on_text is not None and streamed(chat, on_text) \
                    else chat
                done = await complete(client, messages, output=output, retry=self.retry,
                                      cancellation_token=cancellation_token,
                                      extra_create_args=request_args(model, request, told(chat, expected)),
                                      what=f"{model.spec} ({role})" if role else model.spec, pace=endpoint)
            except BaseException as exc:
                endpoint.settle(probing, exc)
                self.budget.settle(held, 0.0)
                raise
            endpoint.settle(probing, None)
            cost = price.cost(done.prompt_tokens, done.completion_tokens, batched) if price else None
            self.budget.settle(held, cost or 0.0)
            self.stats.cost += cost or 0.0
            self.stats.prompt_tokens += done.prompt_tokens
            self.stats.completion_tokens += done.completion_tokens
            self.cache.put(key, model.spec, CachedReply(done.text, done.prompt_tokens, done.completion_tokens,
                                                        done.detail))
        finally:
            endpoint.load -= 1
            del self._pending[key]
            signal.set_result(None)
        return CallResult(done.text, done.prompt_tokens, done.completion_tokens, done.latency_s,
                          done.attempts, False, key, done.finish_reason, done.detail, cost)

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self.cache.close()


def streamed(client: ChatCompletionClient, on_text: Optional[Callable[[str], None]]) -> bool:
    """Whether to stream this call: someone shows its text, and the client streams (in-process
    only, for a Watcher)."""
    if on_text is None or not getattr(client, "streams", False):
        return False
    return not isinstance(on_text, Watcher) or bool(getattr(client, "in_process", False))


def token_bound(model: RoleModel, request: Optional[Request], output: Optional[type[BaseModel]]) -> int:
    """The most completion tokens a call can be answered with (a cost limit reserves them)."""
    asked = (request_args(model, request) or {}).get("max_tokens") or model.settings.get("max_tokens")
    return int(structured_max_tokens(int(asked or DEFAULT_TOKEN_LIMIT), output) or DEFAULT_TOKEN_LIMIT)


def told(client: ChatCompletionClient, expected: Optional[Expected]) -> Optional[Expected]:
    """The expectation a client is told: only one that plays along (the scripted model) is."""
    return expected if getattr(client, "plays_along", False) else None


def request_args(model: RoleModel, request: Optional[Request],
                 expected: Optional[Expected] = None) -> Optional[dict[str, Any]]:
    """The `extra_create_args` of a call: its request, the request's tighter token bound, and
    the answer form it expects (for a client that plays along)."""
    args: dict[str, Any] = {EXPECTED_ARG: expected.as_dict()} if expected is not None else {}
    if request is None:
        return args or None
    args[REQUEST_ARG] = request.as_dict()
    bound = getattr(request, "max_tokens", 0)
    if bound:
        args["max_tokens"] = min(bound, int(model.settings.get("max_tokens") or bound))
    return args


class Streamed:
    """A streaming client seen through `create`: the text goes to `on_text` as it arrives, the
    final result is returned, so moot.models.calls wraps a streamed call like any other."""

    def __init__(self, client: ChatCompletionClient, on_text: Callable[[str], None]):
        self.client, self.on_text = client, on_text

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        return await final_of(self.client.create_stream(messages, **kwargs), self.on_text)
