"""AutoGen's OpenAI and Ollama clients, adjusted for moot's structured replies.

Structured replies come back as raw text, which moot.verdicts parses (an invalid reply is
recorded as UNPARSED with its text, never raised), and their token limit is raised so a
constrained reply can always finish (see moot.models.structured).

OpenAI-compatible servers differ in how they take a JSON schema: OpenAI, vLLM and llama.cpp's
llama-server take `{"type": "json_schema", ...}`; llama-cpp-python's server (0.3.x) rejects
that and takes `{"type": "json_object", "schema": ...}`. The client sends the standard form
and switches to the other, for good, the first time a server rejects it that way.

Replies are bounded whatever the server does (moot.models.bounded): the HTTP body by event hooks
on each client's connection pool, the text by the call's token limit.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import ollama
import openai
from autogen_core import CancellationToken
from autogen_core.models import CreateResult, LLMMessage
from autogen_ext.models.ollama import OllamaChatCompletionClient
from autogen_ext.models.openai import OpenAIChatCompletionClient

from moot.models.bounded import bound_text, bounded_http_hooks
from moot.models.structured import (
    JSON_OBJECT_SCHEMA, JSON_SCHEMA, is_model, response_format, structured_max_tokens,
)


def rejects_json_schema(exc: BaseException) -> bool:
    """Does this error say the server takes only `json_object` response formats?"""
    text = str(exc)
    return (isinstance(exc, openai.APIStatusError) and exc.status_code in (400, 422, 500)
            and "response_format" in text and "json_object" in text and "json_schema" in text)


def bounded(result: CreateResult, max_tokens: Optional[int]) -> CreateResult:
    """The reply cut to what `max_tokens` tokens can hold (a server may ignore the limit)."""
    cut = bound_text(result.content, max_tokens) if isinstance(result.content, str) else None
    return result if cut is None else result.model_copy(update={"content": cut, "finish_reason": "length"})


class OpenAIClient(OpenAIChatCompletionClient):
    """OpenAIChatCompletionClient with raw-text structured replies on any compatible server."""

    dialect = JSON_SCHEMA

    def __init__(self, **kwargs: Any):
        super().__init__(http_client=openai.DefaultAsyncHttpxClient(event_hooks=bounded_http_hooks()), **kwargs)

    async def create(self, messages: Sequence[LLMMessage], *, tools=[], tool_choice="auto",
                     json_output=None, extra_create_args: Mapping[str, Any] = {},
                     cancellation_token: Optional[CancellationToken] = None) -> CreateResult:
        limit = structured_max_tokens(extra_create_args.get("max_tokens", self._create_args.get("max_tokens")),
                                      json_output)
        if not is_model(json_output):
            result = await super().create(messages, tools=tools, tool_choice=tool_choice, json_output=json_output,
                                          extra_create_args=extra_create_args,
                                          cancellation_token=cancellation_token)
        else:
            result = await self._create_structured(messages, json_output, limit, extra_create_args,
                                                   cancellation_token)
        return bounded(result, limit)

    async def _create_structured(self, messages, json_output, limit: Optional[int],
                                 extra_create_args: Mapping[str, Any], cancellation_token) -> CreateResult:
        args = dict(extra_create_args)
        if limit is not None:
            args["max_tokens"] = limit
        try:
            return await self._structured(messages, json_output, args, cancellation_token)
        except openai.APIStatusError as exc:
            if self.dialect != JSON_SCHEMA or not rejects_json_schema(exc):
                raise
        self.dialect = JSON_OBJECT_SCHEMA
        return await self._structured(messages, json_output, args, cancellation_token)

    async def _structured(self, messages, output, args: dict, cancellation_token) -> CreateResult:
        args = {**args, "response_format": response_format(output, self.dialect)}
        return await super().create(messages, extra_create_args=args, cancellation_token=cancellation_token)


class OllamaClient(OllamaChatCompletionClient):
    """OllamaChatCompletionClient whose structured replies (`format`: the schema) can always finish."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._client = ollama.AsyncClient(host=kwargs.get("host"), event_hooks=bounded_http_hooks())

    async def create(self, messages: Sequence[LLMMessage], *, tools=[], tool_choice="auto",
                     json_output=None, extra_create_args: Mapping[str, Any] = {},
                     cancellation_token: Optional[CancellationToken] = None) -> CreateResult:
        options = {**self._create_args.get("options", {}), **extra_create_args.get("options", {})}
        limit = structured_max_tokens(options.get("num_predict"), json_output)
        if limit != options.get("num_predict"):
            extra_create_args = {**extra_create_args, "options": {**options, "num_predict": limit}}
        result = await super().create(messages, tools=tools, tool_choice=tool_choice, json_output=json_output,
                                      extra_create_args=extra_create_args, cancellation_token=cancellation_token)
        return bounded(result, limit)
