"""One model call with bounded retries, timing and usage, and errors worth retrying told apart.

A call that can succeed on a later attempt (an unreachable or overloaded backend, HTTP 5xx, a
timeout, an empty, malformed or oversized reply) is retried with exponential backoff; HTTP 429
waits what the server's `Retry-After` asks (up to MAX_RETRY_AFTER_S, whatever the call timeout),
spending no attempt (up to MAX_THROTTLED such waits); through an endpoint's pace
(moot.models.pace) the whole endpoint waits, with fewer calls in flight.
A call that cannot succeed however often it is sent (HTTP 400, 401, 403, 404, 422: a bad key, an
unknown model, a request the server refuses) fails at once with a FatalModelError, which stops
a batch instead of failing every item the same way. Every cause is one line with secrets redacted (moot.safety.secrets).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import sys
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import (
    Any, AsyncContextManager, AsyncIterator, Awaitable, Mapping, Optional, Protocol, Sequence, TypeVar,
)

from autogen_core import CancellationToken
from autogen_core.models import CreateResult, LLMMessage
from pydantic import BaseModel, ValidationError

from moot.models.requests import NotSupported
from moot.safety.secrets import describe
from moot.safety.neutral import terminal_safe

T = TypeVar("T")
FATAL_STATUS = frozenset({400, 401, 403, 404, 405, 422})
MAX_RETRY_AFTER_S = 120.0
MAX_THROTTLED = 30  # HTTP 429s one call waits out before it fails (they cost no attempt)
SHOWN_WAIT_S = 5.0  # a wait this long before a retry is one line on stderr (moot.models.calls.show_wait)


class ModelCallError(RuntimeError):
    """A model call that failed every attempt; `cause` says why in one line, `role` whose call it
    was (set by the unit's context, so the runner records who failed)."""

    def __init__(self, cause: str, attempts: int):
        super().__init__(f"model call failed after {attempts} attempt(s): {cause}")
        self.cause, self.attempts = cause, attempts
        self.role: Optional[str] = None


class FatalModelError(ModelCallError):
    """A call that cannot succeed on retry (bad key, unknown model, refused request); `status`:
    the HTTP status that said so, if one did. `resumes`: the same command can continue the run
    as it is (the cause was not in its input: a model process that died), as `continues` says."""

    resumes = False
    continues = "run the same command again to continue"

    def __init__(self, cause: str, attempts: int, status: Optional[int] = None):
        super().__init__(cause, attempts)
        self.status = status


class EmptyReply(RuntimeError):
    """The backend answered with no text."""


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3
    backoff_s: float = 1.0
    timeout_s: float = 300.0


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    attempts: int
    finish_reason: Optional[str] = None
    detail: Optional[dict[str, Any]] = None  # what a request measured (moot.models.requests.MeasuredResult)


class MalformedReply(RuntimeError):
    """The backend answered, but not with a chat completion (not JSON, no choices, bad fields)."""


# What a client raises on a reply it cannot read (a body that is not JSON or lacks its fields).
UNREADABLE = (AttributeError, IndexError, KeyError, TypeError, json.JSONDecodeError, ValidationError)


def status_of(exc: BaseException) -> Optional[int]:
    """The HTTP status of a backend error (openai, ollama, httpx), if it has one."""
    for holder in (exc, getattr(exc, "response", None)):
        code = getattr(holder, "status_code", None)
        if isinstance(code, int):
            return code
    return None


def retry_after(exc: BaseException) -> Optional[float]:
    """Seconds a 429's `Retry-After` header asks to wait (a number or an HTTP date), if any."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    value = headers.get("retry-after") if hasattr(headers, "get") else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, when.timestamp() - time.time()) if when else None


def is_fatal(exc: BaseException) -> bool:
    return status_of(exc) in FATAL_STATUS or isinstance(exc, (FatalModelError, PromptTooLong))


class PromptTooLong(ValueError):
    """The prompt does not fit the model's context window: no retry can change that."""


def wait_line(seconds: float, why: str, what: str, attempt: int, attempts: int, last: Optional[BaseException]) -> str:
    """`waiting 30s before retrying openai:gpt-4o-mini (judge): the server asked to wait (HTTP 429,
    Retry-After)`. What failed is named by its HTTP status or its kind, never by a server's words
    (the transcript records those)."""
    status = status_of(last) if last is not None else None
    failed = f"HTTP {status}" if status is not None else type(last).__name__ if last is not None else "no reply"
    reason = ("the server asked to wait (HTTP 429, Retry-After)" if why == "Retry-After"
              else f"backoff after attempt {attempt} of {attempts} failed ({failed})")
    return f"waiting {seconds:.0f}s before retrying {what}: {reason}"


def show_wait(line: str) -> None:
    """A long wait is always shown, --quiet or not: a run that seems stuck is worse than a line."""
    print(terminal_safe(line), file=sys.stderr, flush=True)


async def within(seconds: float, awaitable: Awaitable[T]) -> T:
    """`awaitable` with a time limit. asyncio.timeout (Python 3.11+) bounds it in place; wait_for
    wraps it in a task of its own, which costs more than moot's whole bookkeeping of a call."""
    if hasattr(asyncio, "timeout"):
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)


class Creates(Protocol):
    """What a call needs of a client: AutoGen's `create` (a ChatCompletionClient, or one streamed
    through moot.models.engine.Streamed)."""

    async def create(self, messages: Sequence[LLMMessage], *, json_output: Optional[type[BaseModel]] = None,
                     extra_create_args: Mapping[str, Any] = {},
                     cancellation_token: Optional[CancellationToken] = None) -> CreateResult: ...


class Paced(Protocol):
    """Where a request waits for its place among an endpoint's calls in flight (moot.models.pace)."""

    def attempt(self) -> AsyncContextManager[None]: ...

    def first_to_wait(self) -> bool:
        """Whether this call is the first to wait out the endpoint's current pause (it says so)."""


class Unpaced:
    """No bound: every request goes at once, each call waits for itself."""

    @asynccontextmanager
    async def attempt(self) -> AsyncIterator[None]:
        yield

    def first_to_wait(self) -> bool:
        return True


async def complete(client: Creates, messages: Sequence[LLMMessage], *,
                   output: Optional[type[BaseModel]] = None, retry: RetryPolicy = RetryPolicy(),
                   cancellation_token: Optional[CancellationToken] = None,
                   extra_create_args: Optional[dict[str, Any]] = None, what: str = "a model call",
                   pace: Optional[Paced] = None) -> Completion:
    """One completion, retried within `retry`; raises ModelCallError (FatalModelError) at the end.
    A wait of SHOWN_WAIT_S or more before a retry is one line on stderr (`what` is waiting).
    Each request takes its place in `pace` (an endpoint's bound): a 429 there pauses the endpoint
    (the first call to wait shows it), and the call waits for its place again. A 429 costs no attempt: up to
    MAX_THROTTLED of them a call waits out, as asked, before it fails."""
    last: BaseException | None = None
    paced = pace is not None
    pace = pace or Unpaced()
    attempt = throttled = 0  # failed attempts; 429s waited out
    while True:
        started = time.monotonic()
        asked: Optional[float] = None  # a 429's Retry-After
        try:
            async with pace.attempt():
                result = await within(retry.timeout_s, client.create(
                    list(messages), json_output=output, cancellation_token=cancellation_token,
                    extra_create_args=extra_create_args or {}))
            text = result.content if isinstance(result.content, str) else ""
            if not text.strip():
                raise EmptyReply("the model returned an empty reply")
            return Completion(text, result.usage.prompt_tokens, result.usage.completion_tokens,
                              time.monotonic() - started, attempt + throttled + 1, result.finish_reason,
                              getattr(result, "detail", None))
        except (asyncio.CancelledError, NotSupported):
            raise
        except asyncio.TimeoutError:
            last = TimeoutError(f"no reply within {retry.timeout_s:g}s")
        except Exception as exc:  # noqa: BLE001 - classified: fatal at once, else retried
            last = exc
            if isinstance(exc, FatalModelError):
                raise
            if is_fatal(exc):
                raise FatalModelError(describe(exc), attempt + 1, status_of(exc)) from None
            if isinstance(exc, UNREADABLE):
                last = MalformedReply(f"the backend's reply is not a valid chat completion ({describe(exc)})")
            asked = retry_after(exc) if status_of(exc) == 429 else None
        if asked is not None and throttled < MAX_THROTTLED:  # a pace asked for: no attempt spent
            throttled += 1
            wait, why = min(asked, MAX_RETRY_AFTER_S), "Retry-After"
        else:
            attempt += 1
            if attempt >= retry.attempts:
                break
            wait, why = retry.backoff_s * 2 ** (attempt - 1), "backoff"
        if wait >= SHOWN_WAIT_S and (why == "backoff" or pace.first_to_wait()):
            show_wait(wait_line(wait, why, what, attempt, retry.attempts, last))
        if not (paced and why == "Retry-After"):  # paced, the endpoint waits: the next place comes after
            await asyncio.sleep(wait)
    assert last is not None  # attempts >= 1 (Retry's bound), each failed one set it
    raise ModelCallError(describe(last), attempt + throttled)
