"""OpenAI and any OpenAI-compatible server (vLLM, llama.cpp's servers, LM Studio, ...).

A thin AutoGen ChatCompletionClient over the official `openai` SDK: one chat-completions request
per call, nothing else (the SDK's own retries are off: moot.models.calls retries). Structured
replies ask for the output's JSON schema and come back as raw text, which moot.verdicts parses (an
invalid reply is recorded as UNPARSED with its text), with a token limit raised so a constrained
reply can always finish (moot.models.structured).

Replies are bounded whatever the server does (moot.models.bounded): the HTTP body by event hooks
on the SDK's connection pool, the text by the call's token limit; usage counts a server gets wrong
count as zero (they are reported, never relied on).

Servers differ in how they take a JSON schema: OpenAI, vLLM and llama.cpp's llama-server take
`{"type": "json_schema", ...}`; llama-cpp-python's server (0.3.x) rejects that and takes
`{"type": "json_object", "schema": ...}`. The client sends the standard form and switches to the
other, for good, the first time a server rejects it that way.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import httpx
import openai
from autogen_core import CancellationToken
from autogen_core.models import (
    AssistantMessage, CreateResult, LLMMessage, ModelInfo, RequestUsage, SystemMessage, UserMessage,
)

from moot.models.base import MootClient
from moot.models.bounded import bound_reply, bounded_http_hooks
from moot.models.structured import JSON_OBJECT_SCHEMA, JSON_SCHEMA, is_model, response_format, structured_max_tokens

SAMPLING = ("temperature", "max_tokens", "seed", "top_p")


def rejects_json_schema(exc: BaseException) -> bool:
    """Does this error say the server takes only `json_object` response formats?"""
    text = str(exc)
    return (isinstance(exc, openai.APIStatusError) and exc.status_code in (400, 422, 500)
            and "response_format" in text and "json_object" in text and "json_schema" in text)


def as_openai(message: LLMMessage) -> dict[str, str]:
    role = {SystemMessage: "system", UserMessage: "user", AssistantMessage: "assistant"}.get(type(message), "user")
    return {"role": role, "content": message.content if isinstance(message.content, str) else str(message.content)}


def tokens(count: Any) -> int:
    """A usage count as reported, or 0 when it is not a count (a server's mistake, not the reply's)."""
    return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else 0


class OpenAIClient(MootClient):
    """One model on one OpenAI-compatible endpoint, with the scenario's sampling settings."""

    dialect = JSON_SCHEMA

    def __init__(self, model: str, api_key: str, base_url: Optional[str], settings: Mapping[str, Any],
                 info: Optional[ModelInfo] = None):
        super().__init__()
        self.model = model
        self.sdk = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0,
                                      http_client=openai.DefaultAsyncHttpxClient(event_hooks=bounded_http_hooks()))
        self.settings = {k: settings[k] for k in SAMPLING if settings.get(k) is not None}
        if info is not None:
            self.info = info

    async def create(self, messages: Sequence[LLMMessage], *, tools=(), tool_choice="auto", json_output=None,
                     extra_create_args: Mapping[str, Any] = {},
                     cancellation_token: Optional[CancellationToken] = None) -> CreateResult:
        args = {**self.settings, **extra_create_args}
        if not is_model(json_output):
            return bound_reply(await self._send(messages, args), args.get("max_tokens"))
        limit = structured_max_tokens(args.get("max_tokens"), json_output)
        if limit is not None:
            args["max_tokens"] = limit
        return bound_reply(await self._structured(messages, json_output, args), limit)

    async def _structured(self, messages: Sequence[LLMMessage], output, args: dict[str, Any]) -> CreateResult:
        try:
            return await self._send(messages, {**args, "response_format": response_format(output, self.dialect)})
        except openai.APIStatusError as exc:
            if self.dialect != JSON_SCHEMA or not rejects_json_schema(exc):
                raise
        self.dialect = JSON_OBJECT_SCHEMA
        return await self._send(messages, {**args, "response_format": response_format(output, self.dialect)})

    async def _send(self, messages: Sequence[LLMMessage], args: dict[str, Any]) -> CreateResult:
        """POST /chat/completions through the SDK (its auth, timeouts and error types) with a plain
        JSON body and reply: the SDK's typed request and response layers cost more per call than
        everything else moot does for it (benchmarks/bench_overhead.py)."""
        body = {"model": self.model, "messages": [as_openai(m) for m in messages], **args}
        response = await self.sdk.post("/chat/completions", body=body, cast_to=httpx.Response)
        reply = response.json()
        choice = (reply.get("choices") or [{}])[0]
        counts = reply.get("usage") or {}
        usage = RequestUsage(prompt_tokens=tokens(counts.get("prompt_tokens")),
                             completion_tokens=tokens(counts.get("completion_tokens")))
        self.add_usage(usage)
        finish = choice.get("finish_reason")
        content = (choice.get("message") or {}).get("content")
        return CreateResult(content=content if isinstance(content, str) else "", usage=usage, cached=False,
                            finish_reason=finish if finish in ("stop", "length", "content_filter") else "unknown")

    async def close(self) -> None:
        await self.sdk.close()
