"""A native Ollama server, through autogen-ext's OllamaChatCompletionClient.

Structured replies send the output's JSON schema as Ollama's `format` and come back as raw text
(moot.protocols.conference.verdicts parses them); their `num_predict` is raised so a constrained reply can always finish
(moot.models.structured). Replies are bounded whatever the server does (moot.models.bounded): the
HTTP body by event hooks on the client's connection pool, the text by the call's token limit.
Imported only when an `ollama:` model is used.

A base model (`backends.ollama.kind: base`) is driven as the embedded one is, in document form
(moot.models.requests): a continuation is Ollama's generate endpoint in raw mode (no template)
with the request's stops, cut to its last complete sentence (logits processors cannot be applied
by a server); a closed choice or score is read from the first tokens' top log-probabilities
(`logprobs`, Ollama 0.12 and later; moot.models.server_likelihood). A server that sends none
answers NotSupported, and the caller asks for structured output instead; so does a chat model.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import ollama
from autogen_core import CancellationToken
from autogen_core.models import CreateResult, LLMMessage, RequestUsage
from autogen_ext.models.ollama import OllamaChatCompletionClient

from moot.models.base import JsonOutput, ToolChoice, Tools
from moot.models.bounded import bound_reply, bounded_http_hooks
from moot.models.continuation import served_continuation
from moot.models.requests import (
    Continue, MeasuredResult, NotSupported, Request, Score, choice_detail, document_text, request_of, score_detail,
    without_request,
)
from moot.models.server_likelihood import Separators
from moot.models.structured import structured_max_tokens

TOP_LOGPROBS = 20


class OllamaClient(OllamaChatCompletionClient):
    """OllamaChatCompletionClient whose structured replies (`format`: the schema) can always
    finish, and which answers a base model's requests through the generate endpoint."""

    model_kind = "instruct"  # `base` when the scenario declares it (backends.ollama.kind)

    def __init__(self, auth: Optional[tuple[str, str]] = None, params: Optional[Mapping[str, str]] = None,
                 **kwargs: Any):
        """`auth` (HTTP basic), `params` (query parameters): sent with every request."""
        super().__init__(**kwargs)
        self._client = ollama.AsyncClient(host=kwargs.get("host"), event_hooks=bounded_http_hooks(),
                                          auth=auth, params=params or None)
        self.separators = Separators()  # the token its tokenizer writes before a set of options, once learnt

    async def create(self, messages: Sequence[LLMMessage], *, tools: Tools = [], tool_choice: ToolChoice = "auto",
                     json_output: JsonOutput = None, extra_create_args: Mapping[str, Any] = {},
                     cancellation_token: Optional[CancellationToken] = None) -> CreateResult:
        request = request_of(extra_create_args)
        if request is not None:
            return await self._answer(messages, request, without_request(extra_create_args))
        options = {**self._create_args.get("options", {}), **extra_create_args.get("options", {})}
        limit = structured_max_tokens(options.get("num_predict"), json_output)
        if limit is not None and limit != options.get("num_predict"):
            extra_create_args = {**extra_create_args, "options": {**options, "num_predict": limit}}
        result = await super().create(messages, tools=tools, tool_choice=tool_choice, json_output=json_output,
                                      extra_create_args=extra_create_args, cancellation_token=cancellation_token)
        return bound_reply(result, limit)

    async def _answer(self, messages: Sequence[LLMMessage], request: Request, extra: Mapping[str, Any]) -> CreateResult:
        if not (request.document or self.model_kind == "base"):
            raise NotSupported("Ollama's chat endpoint reads no given options (declare a base model: kind: base)")
        options = {**self._create_args.get("options", {}), **extra.get("options", {})}
        if extra.get("max_tokens"):  # a request's tighter bound
            options["num_predict"] = min(int(extra["max_tokens"]), int(options.get("num_predict") or extra["max_tokens"]))
        prompt = document_text(messages, request.prefix)
        if isinstance(request, Continue):
            return await self._continue(prompt, request, options)

        replies: list[Any] = []

        async def top(extension: str) -> dict[str, float]:
            reply = await self._generate(prompt + extension, {**options, "num_predict": 1, "temperature": 0},
                                         logprobs=True, top_logprobs=TOP_LOGPROBS)
            replies.append(reply)
            first = (reply.logprobs or [None])[0]
            return {str(t.token): float(t.logprob) for t in (first.top_logprobs or [])} if first else {}

        note = self.separators.note(request.texts(), True)  # before the reading may learn one
        logprobs, bounded = await self.separators.read(top, request.texts(), extendable=True,
                                                       number=isinstance(request, Score))
        text, detail = (score_detail if isinstance(request, Score) else choice_detail)("top_logprobs", logprobs, bounded)
        detail.update(note)
        usage = RequestUsage(prompt_tokens=sum(r.prompt_eval_count or 0 for r in replies),
                             completion_tokens=sum(r.eval_count or 0 for r in replies))
        return MeasuredResult(content=text, usage=usage, finish_reason="stop", cached=False, detail=detail)

    async def _continue(self, prompt: str, request: Continue, options: dict[str, Any]) -> CreateResult:
        reply = await self._generate(prompt, {**options, **({"stop": list(request.stop)} if request.stop else {})})
        usage = RequestUsage(prompt_tokens=reply.prompt_eval_count or 0, completion_tokens=reply.eval_count or 0)
        said = bound_reply(CreateResult(content=reply.response or "", usage=usage, cached=False,
                                        finish_reason="length" if reply.done_reason == "length" else "stop"),
                           options.get("num_predict"))
        return served_continuation(said, request)

    async def _generate(self, prompt: str, options: dict[str, Any], **more: Any) -> Any:
        """One raw-mode generate call (no template: the prompt is the document)."""
        return await self._client.generate(model=self._model_name, prompt=prompt, raw=True, stream=False,
                                           options=options, **more)
