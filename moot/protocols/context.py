"""What a per-item protocol stage calls models through: cache, concurrency bound, retries, record.

`Engine` is shared by all items of a run: the model clients (one per spec + settings), the reply
cache, one asyncio.Semaphore bounding the calls in flight (across items and within an item's
concurrent stages), the retry policy and the run's counters. `StageContext` is one item's view:
`await ctx.call(role, messages, output=Model)` looks the reply up in the cache, otherwise sends it
(inside the semaphore, retried by moot.models.calls.complete), and records a `call` event.
The same call asked twice at once is sent once: the second waits and reads the cache.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from autogen_core.models import ChatCompletionClient, LLMMessage
from pydantic import BaseModel

from moot.models.calls import RetryPolicy, complete
from moot.models.factory import BackendOptions, build_client
from moot.protocols.cache import CachedReply, NoCache, ReplyCache, cache_key, message_data
from moot.protocols.record import Call, ItemRecorder
from moot.transcript import Usage


@dataclass(frozen=True)
class RoleModel:
    """The model playing a role: its spec string and generation settings."""

    spec: str
    settings: Mapping[str, Any]


@dataclass
class RunStats:
    backend_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Reply:
    text: str
    cached: bool
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Engine:
    """Shared machinery of a run. `clients` may hold ready clients by spec (tests)."""

    def __init__(self, *, concurrency: int = 4, cache: ReplyCache | NoCache | None = None,
                 retry: RetryPolicy = RetryPolicy(), options: BackendOptions = BackendOptions(),
                 clients: Optional[Mapping[str, ChatCompletionClient]] = None):
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.concurrency = concurrency
        self.semaphore = asyncio.Semaphore(concurrency)
        self.cache = cache if cache is not None else NoCache()
        self.retry, self.options = retry, options
        self.stats = RunStats()
        self._given = dict(clients or {})
        self._clients: dict[str, ChatCompletionClient] = {}
        self._pending: dict[str, asyncio.Future] = {}  # cache keys being asked right now

    def client(self, model: RoleModel) -> ChatCompletionClient:
        if model.spec in self._given:
            return self._given[model.spec]
        key = f"{model.spec}|{sorted(model.settings.items())}"
        if key not in self._clients:
            self._clients[key] = build_client(model.spec, model.settings, self.options)
        return self._clients[key]

    async def ask(self, model: RoleModel, messages: Sequence[LLMMessage],
                  output: Optional[type[BaseModel]]) -> tuple[Reply, float, int]:
        """(reply, latency, attempts): from the cache, or sent within the concurrency bound."""
        key = cache_key(model.spec, model.settings, messages, output)
        while True:  # the same call already in flight (another item, a shared demo): wait for it
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                return Reply(hit.text, True, hit.prompt_tokens, hit.completion_tokens), 0.0, 0
            pending = self._pending.get(key)
            if pending is None:
                break
            await asyncio.shield(pending)  # then the cache has it, or (failed) we send it ourselves
        client = self.client(model)
        self._pending[key] = signal = asyncio.get_running_loop().create_future()
        try:
            async with self.semaphore:
                self.stats.backend_calls += 1
                done = await complete(client, messages, output=output, retry=self.retry)
            self.stats.prompt_tokens += done.prompt_tokens
            self.stats.completion_tokens += done.completion_tokens
            self.cache.put(key, model.spec, CachedReply(done.text, done.prompt_tokens, done.completion_tokens))
        finally:
            del self._pending[key]
            signal.set_result(None)
        return Reply(done.text, False, done.prompt_tokens, done.completion_tokens), done.latency_s, done.attempts

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self.cache.close()


@dataclass
class StageContext:
    """One item's access to its models; every call becomes a `call` event in its transcript."""

    engine: Engine
    models: Mapping[str, RoleModel]
    recorder: ItemRecorder
    calls: list[Call] = field(default_factory=list)

    async def call(self, role: str, messages: Sequence[LLMMessage],
                   output: Optional[type[BaseModel]] = None, *, stage: str = "") -> Reply:
        model = self.models.get(role) or self.models["default"]
        started = time.monotonic()
        reply, latency, attempts = await self.engine.ask(model, messages, output)
        event = Call(stage=stage or role, role=role, model=model.spec,
                     messages=[message_data(m) for m in messages], reply=reply.text,
                     usage=Usage(prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens),
                     latency_s=round(latency if not reply.cached else time.monotonic() - started, 4),
                     attempts=attempts, cached=reply.cached)
        self.calls.append(event)
        self.recorder.record(event)
        return reply
