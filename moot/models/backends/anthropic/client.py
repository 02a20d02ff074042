"""Anthropic's Messages API (`POST /v1/messages`): Claude, and any server speaking it (llama.cpp's
llama-server serves it too).

A minimal HTTP client over httpx (installed with the ollama library moot depends on) rather than
the `anthropic` SDK: moot needs one request and one reply shape, retries itself (moot.models.calls)
and bounds the reply body with the same httpx event hooks as its other HTTP backends
(moot.models.bounded), so the SDK would add a dependency, its retries and its own types to unwrap
for nothing moot uses.

The request and the reply are read by plain functions (`message_body`, `message_result`) that the
Message Batches path shares: with `--batch` a request waits in its wave instead
(moot.models.backends.anthropic.batch: a line's `params` is the body, its result's `message` the
reply), so a batched call is cached, counted and recorded exactly like a direct one.

- System messages become the top-level `system`; consecutive turns of one role are joined (the API
  alternates user and assistant turns); `max_tokens` is required, so a scenario without one sends
  DEFAULT_MAX_TOKENS. `seed` and `repeat_penalty` have no Messages API field and are not sent.
- Structured replies ask for the output's JSON schema (`output_config.format`, Anthropic's
  structured outputs) without the keywords it does not take (numeric bounds, string lengths: moot
  still checks them when it parses the reply), and come back as text that the protocol parses: an
  invalid reply is recorded unparsed with its text. A server that rejects `output_config` (HTTP 400
  naming it, directly or in a batch) is asked without it from then on, and its replies are parsed
  as they come.
- The API reports no log-probabilities: a closed choice or a score is NotSupported, and the caller
  asks for structured output; a continuation is a chat reply with `stop_sequences` (a document form
  or a prefilled reply is NotSupported).
- Errors carry the HTTP status and the server's `Retry-After`, which moot.models.calls classifies:
  429, 529 (overloaded), 5xx, timeouts and connection errors are retried; 400-422 are fatal.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import httpx
from autogen_core import CancellationToken
from autogen_core.models import AssistantMessage, CreateResult, FinishReasons, LLMMessage, RequestUsage, SystemMessage
from pydantic import BaseModel

from moot.models.batch import Lane, LineFailed
from moot.models.base import JsonOutput, MootClient, ToolChoice, Tools
from moot.models.bounded import bound_reply, bounded_http_hooks
from moot.models.calls import status_of
from moot.models.continuation import served_continuation
from moot.models.requests import Continue, NotSupported, request_of, without_request
from moot.models.structured import is_model, response_format, structured_max_tokens

VERSION = "2023-06-01"  # the `anthropic-version` header: the Messages API's only version
PATH = "/v1/messages"  # the Messages endpoint (a batch line names it: moot.models.batch groups waves by it)
DEFAULT_MAX_TOKENS = 4096  # the API requires max_tokens; a scenario that sets none gets this
SAMPLING = {"temperature": "temperature", "top_p": "top_p", "max_tokens": "max_tokens"}  # moot -> Messages API
UNSUPPORTED_SCHEMA = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                                "minLength", "maxLength"})  # keywords Anthropic's structured outputs refuse
FINISH: dict[str, FinishReasons] = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
                                    "refusal": "content_filter"}


class AnthropicStatusError(RuntimeError):
    """A reply with an HTTP error status; `status_code` and `response` (its headers: Retry-After)
    are what moot.models.calls reads to retry or give up. The message is the server's error type and
    message, never the request (which holds the key)."""

    def __init__(self, response: httpx.Response):
        self.response, self.status_code = response, response.status_code
        super().__init__(f"HTTP {response.status_code}: {error_text(response)}")


def error_text(response: httpx.Response) -> str:
    """The error's `type: message` from an Anthropic error body, else the body's start."""
    try:
        error = response.json().get("error") or {}
        return f"{error.get('type', 'error')}: {error.get('message', '')}"[:300]
    except (ValueError, AttributeError):
        return response.text[:300]


def turns(messages: Sequence[LLMMessage]) -> tuple[str, list[dict[str, str]]]:
    """The system prompt and the alternating user/assistant turns of `messages` (consecutive
    messages of one role joined by a blank line)."""
    system = [str(m.content) for m in messages if isinstance(m, SystemMessage)]
    said: list[dict[str, str]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            continue
        role = "assistant" if isinstance(message, AssistantMessage) else "user"
        text = message.content if isinstance(message.content, str) else str(message.content)
        if said and said[-1]["role"] == role:
            said[-1]["content"] += "\n\n" + text
        else:
            said.append({"role": role, "content": text})
    return "\n\n".join(system), said


def anthropic_schema(schema: Any) -> Any:
    """`schema` without the keywords Anthropic's structured outputs refuse (at any depth)."""
    if isinstance(schema, dict):
        return {k: anthropic_schema(v) for k, v in schema.items() if k not in UNSUPPORTED_SCHEMA}
    if isinstance(schema, list):
        return [anthropic_schema(v) for v in schema]
    return schema


def output_config(output: type[BaseModel]) -> dict[str, Any]:
    """`output_config` asking for `output`'s schema (the strict one moot asks of OpenAI, trimmed)."""
    schema = response_format(output)["json_schema"]["schema"]
    return {"format": {"type": "json_schema", "schema": anthropic_schema(schema)}}


def message_body(model: str, messages: Sequence[LLMMessage], args: Mapping[str, Any],
                 output: Optional[type[BaseModel]] = None, stop: Sequence[str] = ()) -> dict[str, Any]:
    """The JSON body of a Messages API request (also a Message Batches line's `params`)."""
    system, said = turns(messages)
    body: dict[str, Any] = {"model": model, "max_tokens": DEFAULT_MAX_TOKENS}
    body.update({SAMPLING[k]: v for k, v in args.items() if k in SAMPLING and v is not None})
    body["messages"] = said
    if system:
        body["system"] = system
    if stop:
        body["stop_sequences"] = list(stop)
    if output is not None:
        body["output_config"] = output_config(output)
    return body


def count(value: Any) -> int:
    """A usage count as reported, or 0 when it is not one (a server's mistake)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def message_result(reply: Mapping[str, Any]) -> CreateResult:
    """A Messages API reply as AutoGen's CreateResult: its text blocks joined, its usage (prompt
    tokens: the uncached, cache-written and cache-read input together), its stop reason."""
    text = "".join(block.get("text") or "" for block in reply["content"] if block.get("type") == "text")
    usage = reply.get("usage") or {}
    prompt = sum(count(usage.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    return CreateResult(content=text, usage=RequestUsage(prompt_tokens=prompt, completion_tokens=count(
        usage.get("output_tokens"))), cached=False, finish_reason=FINISH.get(str(reply.get("stop_reason")), "unknown"))


def rejects_output_config(exc: BaseException) -> bool:
    """Does this error say the server takes no `output_config` (an older model or server)?"""
    return status_of(exc) == 400 and "output_config" in str(exc)


class AnthropicClient(MootClient):
    """One model on one Messages API endpoint, with the scenario's sampling settings."""

    def __init__(self, model: str, api_key: Optional[str], url: str, settings: Mapping[str, Any],
                 headers: Optional[Mapping[str, str]] = None, query: Optional[Mapping[str, str]] = None):
        """`url`: the messages endpoint; `headers`, `query`: sent with every request (the endpoint's
        credentials, moot.models.provider.Endpoint)."""
        super().__init__()
        self.model, self.url = model, url
        self.settings = {k: settings[k] for k in SAMPLING if settings.get(k) is not None}
        sent = {"anthropic-version": VERSION, **(headers or {}), **({"x-api-key": api_key} if api_key else {})}
        self.http = httpx.AsyncClient(headers=sent, params=dict(query or {}), timeout=None,
                                      event_hooks=bounded_http_hooks())  # moot.models.calls times each call
        self.structured = True  # False once the server refused output_config
        self.lane: Optional[Lane] = None  # with --batch: where requests go (moot.models.backends.anthropic.batch)

    async def create(self, messages: Sequence[LLMMessage], *, tools: Tools = (), tool_choice: ToolChoice = "auto",
                     json_output: JsonOutput = None, extra_create_args: Mapping[str, Any] = {},
                     cancellation_token: Optional[CancellationToken] = None) -> CreateResult:
        request = request_of(extra_create_args)
        args = {**self.settings, **without_request(extra_create_args)}
        if request is not None:
            if not isinstance(request, Continue):
                raise NotSupported("the Messages API reports no log-probabilities")
            if request.document or request.reply_prefix:
                raise NotSupported("the Messages API continues no document and prefills no reply here")
            said = await self._send(message_body(self.model, messages, args, stop=request.stop))
            return served_continuation(bound_reply(said, args.get("max_tokens")), request)
        if not is_model(json_output):
            return bound_reply(await self._send(message_body(self.model, messages, args)), args.get("max_tokens"))
        limit = structured_max_tokens(args.get("max_tokens"), json_output)
        if limit is not None:
            args["max_tokens"] = limit
        return bound_reply(await self._structured(messages, json_output, args), limit)

    async def _structured(self, messages: Sequence[LLMMessage], output: type[BaseModel],
                          args: Mapping[str, Any]) -> CreateResult:
        if self.structured:
            try:
                return await self._send(message_body(self.model, messages, args, output))
            except (AnthropicStatusError, LineFailed) as exc:
                if not rejects_output_config(exc):
                    raise
            self.structured = False
        return await self._send(message_body(self.model, messages, args))

    async def _send(self, body: dict[str, Any]) -> CreateResult:
        result = message_result(await self._reply(body))
        self.add_usage(result.usage)
        return result

    async def _reply(self, body: dict[str, Any]) -> Mapping[str, Any]:
        """The server's reply to `body`: from the Messages endpoint, or with --batch its wave's batch."""
        if self.lane is not None:
            return await self.lane.post(PATH, body)
        response = await self.http.post(self.url, json=body)
        if not response.is_success:
            raise AnthropicStatusError(response)
        reply: Mapping[str, Any] = response.json()
        return reply

    async def close(self) -> None:
        await self.http.aclose()
