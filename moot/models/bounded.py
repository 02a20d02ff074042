"""Replies bounded in size whatever the server does.

A server may ignore `max_tokens` (or be hostile) and send megabytes; stored, and fed back into
later prompts, that grows transcripts and requests without bound. Two limits, for the HTTP
backends (OpenAI-compatible and Ollama):

- the HTTP body: `bounded_http_hooks()` are httpx event hooks that ask for an uncompressed reply
  and stop reading one past MAX_RESPONSE_BYTES (a Content-Length over it is refused before the
  body is read; a compressed body, whose expanded size cannot be bounded, is refused). The call
  fails with ReplyTooLarge, a cause retried like a server error;
- the text: `bound_reply` cuts a reply longer than its token limit could produce (CHARS_PER_TOKEN
  per token) to that length, as a server honouring max_tokens would have (finish_reason
  "length").
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Any, AsyncIterator, Awaitable, Callable, Optional

from autogen_core.models import CreateResult

MAX_RESPONSE_BYTES = 1024 * 1024
CHARS_PER_TOKEN = 16  # generous: a token of any tokenizer carries far fewer characters on average
DEFAULT_TOKEN_LIMIT = 8192  # the largest max_tokens a scenario may set


class ReplyTooLarge(RuntimeError):
    """A reply body over MAX_RESPONSE_BYTES (or compressed); the call fails, retried."""


def text_limit(max_tokens: Optional[int]) -> int:
    return CHARS_PER_TOKEN * int(max_tokens or DEFAULT_TOKEN_LIMIT)


def bound_reply(result: CreateResult, max_tokens: Optional[int]) -> CreateResult:
    """The reply cut to what `max_tokens` tokens can hold (a server may ignore the limit)."""
    limit = text_limit(max_tokens)
    if not isinstance(result.content, str) or len(result.content) <= limit:
        return result
    return result.model_copy(update={"content": result.content[:limit], "finish_reason": "length"})


Hook = Callable[[Any], Awaitable[None]]  # an httpx event hook (its request or response)


class _Bounded:
    """A response body stream that raises ReplyTooLarge past `limit` bytes."""

    def __init__(self, stream: Any, limit: int):
        self._stream, self._limit, self._read = stream, limit, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            self._read += len(chunk)
            if self._read > self._limit:
                raise ReplyTooLarge(f"the server's reply exceeds {self._limit // 1024} KiB (max_tokens ignored?)")
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


@lru_cache(maxsize=None)
def _bounded_stream(library: str) -> type:
    """A bounded stream that is also an async byte stream of `library` (the OpenAI SDK's is httpx2
    or httpx, Ollama's httpx): each checks that a response's stream is one of its own. Made from
    the library a response comes from, so a process imports only the HTTP libraries it uses."""
    return type("_BoundedStream", (_Bounded, importlib.import_module(library).AsyncByteStream), {})


async def _ask_identity(request: Any) -> None:
    request.headers["Accept-Encoding"] = "identity"


def _checker(limit: int) -> Hook:
    async def check(response: Any) -> None:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            await response.aclose()
            raise ReplyTooLarge(f"the server sent a compressed reply ({encoding}) though none was asked for; "
                                "its size cannot be bounded")
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            await response.aclose()
            raise ReplyTooLarge(f"the server's reply is {int(length) // 1024} KiB, over the {limit // 1024} KiB "
                                "limit (max_tokens ignored?)")
        response.stream = _bounded_stream(type(response).__module__.partition(".")[0])(response.stream, limit)

    return check


def bounded_http_hooks(limit: int = MAX_RESPONSE_BYTES) -> dict[str, list[Hook]]:
    """`event_hooks=` for an httpx (or httpx2) AsyncClient: see the module docstring."""
    return {"request": [_ask_identity], "response": [_checker(limit)]}
