"""Calling a model with bounded retries, timing and usage accounting.

Unreachable backends, HTTP 5xx, timeouts and empty replies are retried with exponential
backoff; after the last attempt a ModelCallError carries the cause so the run can be saved
as failed and resumed later.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Optional, Sequence

from autogen_core import CancellationToken
from autogen_core.models import ChatCompletionClient, LLMMessage
from pydantic import BaseModel


class ModelCallError(RuntimeError):
    """A model call that failed every attempt; `cause` says why in one line."""

    def __init__(self, cause: str, attempts: int):
        super().__init__(f"model call failed after {attempts} attempt(s): {cause}")
        self.cause, self.attempts = cause, attempts


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
    cached: bool = False


def describe(exc: BaseException) -> str:
    """One line naming the exception type and message (API keys never appear in these)."""
    text = " ".join(str(exc).split()) or "no message"
    return f"{type(exc).__name__}: {text[:300]}"


async def complete(
    client: ChatCompletionClient,
    messages: Sequence[LLMMessage],
    *,
    output: Optional[type[BaseModel]] = None,
    retry: RetryPolicy = RetryPolicy(),
    cancellation_token: Optional[CancellationToken] = None,
) -> Completion:
    """One completion, retried up to `retry.attempts` times; raises ModelCallError at the end."""
    last: BaseException | None = None
    for attempt in range(1, retry.attempts + 1):
        started = time.monotonic()
        try:
            result = await asyncio.wait_for(
                client.create(list(messages), json_output=output,
                              cancellation_token=cancellation_token),
                timeout=retry.timeout_s,
            )
            text = result.content if isinstance(result.content, str) else ""
            if not text.strip():
                raise EmptyReply("the model returned an empty reply")
            return Completion(text, result.usage.prompt_tokens, result.usage.completion_tokens,
                              time.monotonic() - started, attempt, bool(result.cached))
        except asyncio.CancelledError:
            raise
        except asyncio.TimeoutError:
            last = TimeoutError(f"no reply within {retry.timeout_s:g}s")
        except Exception as exc:  # noqa: BLE001 - any backend failure is retried, then reported
            last = exc
        if attempt < retry.attempts:
            await asyncio.sleep(retry.backoff_s * 2 ** (attempt - 1))
    raise ModelCallError(describe(last), retry.attempts)
