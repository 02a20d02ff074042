"""OpenAI and any OpenAI-compatible server (vLLM, llama.cpp's servers, LM Studio, ...).

A thin AutoGen ChatCompletionClient over the official `openai` SDK: one chat-completions request
per call, nothing else (the SDK's own retries are off: moot.models.calls retries). Requests go
through the SDK's aiohttp transport (`openai[aiohttp]`), which spends half the CPU per request of
its default httpx one (0.7 vs 1.5 ms on the benchmarks' loopback server): at 32 calls in flight
the client's CPU, not the server, is what a fast server waits on. A plain JSON request is sent
through the SDK's own HTTP client (the one moot builds for it) with the SDK's headers (its key,
organisation and project, platform headers and the endpoint's own) and answers with the SDK's
errors, but without its request layer (an options model, URL and header merging, on every call:
0.3 ms of a call's 0.6 here, as much as everything else moot does for the call); a streamed reply
goes through the SDK whole. Structured
replies ask for the output's JSON schema and come back as raw text, which moot.protocols.conference.verdicts parses (an
invalid reply is recorded as UNPARSED with its text), with a token limit raised so a constrained
reply can always finish (moot.models.structured).

Replies are bounded whatever the server does (moot.models.bounded): the HTTP body by event hooks
on the SDK's connection pool, the text by the call's token limit; usage counts a server gets wrong
count as zero (they are reported, never relied on).

Servers differ in how they take a JSON schema: OpenAI, vLLM and llama.cpp's llama-server take
`{"type": "json_schema", ...}`; llama-cpp-python's server (0.3.x) rejects that and takes
`{"type": "json_object", "schema": ...}`. The client sends the standard form and switches to the
other, for good, the first time a server rejects it that way.

Requests beyond chat (moot.models.requests): a continuation in document form is a raw-text
completion (`/completions`, a base model behind llama.cpp's or vLLM's server), in chat form a chat
reply with the stop strings; either is cut to its last complete sentence (logits processors
cannot be applied by a server). Closed choices and scores are read from the first tokens' top
log-probabilities (`logprobs`; moot.models.server_likelihood), asked streamed: llama-cpp-python's
server computes an unstreamed reply's log-probabilities over the whole context (`_top_logprobs`). A server that refuses, ignores or
garbles `logprobs` (none, null, NaN, a string: moot.models.server_likelihood.NoLogprobs) answers
NotSupported, for good, and the caller falls back to structured output.

A server declared `llama-server` (`backends.openai.server`) gets the embedded model's generation
controls in llama-server's own fields (moot.models.backends.openai.llama_controls): its sampling chain with every
generation, and a continuation's rules (first token, minimum length, a whole sentence, no copied
runs), so its turns are the embedded model's turns, not shorter ones.
"""

from __future__ import annotations

import json
import ssl
from contextlib import aclosing, contextmanager
from typing import Any, AsyncGenerator, Iterator, Mapping, Optional, Sequence, Union, cast

import aiohttp
import anyio
import openai
from autogen_core import CancellationToken
from autogen_core.models import (
    AssistantMessage, CreateResult, FinishReasons, LLMMessage, RequestUsage, SystemMessage, UserMessage,
)
from pydantic import BaseModel

from moot.models.batch import Lane
from moot.models.base import JsonOutput, MootClient, Stream, ToolChoice, Tools
from moot.models.bounded import bound_reply, bounded_http_hooks
from moot.models.continuation import continuation_result, served_continuation
from moot.models.backends.openai.llama_controls import LLAMA_SERVER, controlled_turn, sampling
from moot.models.requests import (
    Choose, Continue, MeasuredResult, NotSupported, Request, Score, choice_detail, document_text, request_of,
    score_detail, without_request,
)
from moot.models.replies import json_object
from moot.models.server_likelihood import NoLogprobs, Separators, logprob
from moot.models.structured import JSON_OBJECT_SCHEMA, JSON_SCHEMA, is_model, response_format, structured_max_tokens

try:  # the SDK's HTTP library: httpx2 since openai 3 (importing httpx as well would cost start-up time)
    import httpx2 as http
except ImportError:
    import httpx as http  # type: ignore[no-redef]  # openai < 3

SAMPLING = ("temperature", "max_tokens", "seed", "top_p")
TOP_LOGPROBS = 20  # OpenAI's most
REQUEST_ERRORS = (http.RequestError, ssl.SSLError, anyio.EndOfStream)  # what the SDK calls a connection error
# A document's options are looked for among the top 1000 (where the server allows more than 20):
# after a name, the conference judge's " agree" and " disagree" ranked 32nd and 82nd on the
# embedded model (p 0.002 and 0.0006); read from the top 20 they fell back to structured output,
# 10-19 s a call through llama_cpp.server, where one more listed token costs nothing (it sorts the
# whole vocabulary for every position it reports). OpenAI's and vLLM's default most is 20: a server
# that refuses the longer list is asked for the top 20 from then on.
WIDE_LOGPROBS = 1000
NEWLINES = {"\n": False, "\n\n": False, "\n\n\n": False}  # llama-server: false bans the tokens of the text
Options = tuple[dict[str, float], list[str], list[dict[str, Any]]]  # log-probabilities, bounded, replies


class Refused(NotSupported):
    """The server refused a request for log-probabilities (HTTP 400, 404, 422 or 500)."""


def rejects_json_schema(exc: BaseException) -> bool:
    """Does this error say the server takes only `json_object` response formats?"""
    text = str(exc)
    return (isinstance(exc, openai.APIStatusError) and exc.status_code in (400, 422, 500)
            and "response_format" in text and "json_object" in text and "json_schema" in text)


@contextmanager
def connection_errors_named() -> Iterator[None]:
    """The aiohttp transport reports every aiohttp connection error (a reset, a refused
    connection) as a connect timeout, which the SDK calls "Request timed out.": a timeout whose
    root cause is not a timeout is a connection error, and the call's cause says so."""
    try:
        yield
    except openai.APITimeoutError as exc:
        root: BaseException = exc
        while root.__cause__ is not None:
            root = root.__cause__
        if root is exc or isinstance(root, TimeoutError):
            raise
        raise openai.APIConnectionError(request=exc.request) from root


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
                 headers: Optional[Mapping[str, str]] = None, query: Optional[Mapping[str, str]] = None,
                 kind: str = "auto", server: str = "any"):
        """`headers`, `query`: sent with every request (moot.models.provider.Endpoint: the base URL's
        credentials as the server expects them); `kind`: `base` for a base model (documents);
        `server`: `llama-server` for llama.cpp's server (its own generation fields are sent)."""
        super().__init__()
        self.model = model
        self.model_kind = "base" if kind == "base" else "instruct"  # a server's model: a chat model unless declared
        self.http = openai.DefaultAioHttpClient(event_hooks=bounded_http_hooks())
        self.sdk = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0,
                                      default_headers=headers or None, default_query=query or None,
                                      http_client=self.http)
        self.headers: Optional[dict[str, str]] = None  # the SDK's, made at the first request (sdk_headers)
        self.query = dict(query or {})  # the SDK's default query: the endpoint's credentials
        self.endpoint_headers = dict(headers or {})  # the endpoint's own (its credentials)
        self.lane: Optional[Lane] = None  # with --batch: where requests go instead (moot.models.backends.openai.batch)
        self.settings = {k: settings[k] for k in SAMPLING if settings.get(k) is not None}
        self.controls = sampling(settings) if server == LLAMA_SERVER else None  # llama-server's own fields
        self.no_logprobs = ""  # why this server cannot measure choices, once it said so
        self.narrow = ""  # why this server gives no more than the top 20, once it said so
        self.separators = Separators()  # the token its tokenizer writes before a set of options, once learnt

    async def create(self, messages: Sequence[LLMMessage], *, tools: Tools = (), tool_choice: ToolChoice = "auto",
                     json_output: JsonOutput = None, extra_create_args: Mapping[str, Any] = {},
                     cancellation_token: Optional[CancellationToken] = None) -> CreateResult:
        request = request_of(extra_create_args)
        if request is not None:
            return await self._answer(messages, request, {**self.settings, **without_request(extra_create_args)})
        args = {**self.settings, **extra_create_args}
        if not is_model(json_output):
            return bound_reply(await self._send(messages, args), args.get("max_tokens"))
        limit = structured_max_tokens(args.get("max_tokens"), json_output)
        if limit is not None:
            args["max_tokens"] = limit
        return bound_reply(await self._structured(messages, json_output, args), limit)

    async def _structured(self, messages: Sequence[LLMMessage], output: type[BaseModel], args: dict[str, Any]) -> CreateResult:
        try:
            return await self._send(messages, {**args, "response_format": response_format(output, self.dialect)})
        except openai.APIStatusError as exc:
            if self.dialect != JSON_SCHEMA or not rejects_json_schema(exc):
                raise
        self.dialect = JSON_OBJECT_SCHEMA
        return await self._send(messages, {**args, "response_format": response_format(output, self.dialect)})

    @property
    def streams(self) -> bool:
        """create_stream yields text as the server sends it; a batched request is answered whole."""
        return self.lane is None

    async def create_stream(self, messages: Sequence[LLMMessage], *, tools: Tools = (),
                            tool_choice: ToolChoice = "auto", json_output: JsonOutput = None,
                            extra_create_args: Mapping[str, Any] = {},
                            cancellation_token: Optional[CancellationToken] = None) -> Stream:
        """Text chunks as the server sends them (server-sent events), then the CreateResult. A
        structured reply, a choice or a score is not streamed: only its result is yielded."""
        request = request_of(extra_create_args)
        if json_output is not None or not (request is None or isinstance(request, Continue)) or \
                (request is not None and self.controls is not None and self.document_form(request)):
            yield await self.create(messages, json_output=json_output, extra_create_args=extra_create_args)
            return
        args = {**self.settings, **without_request(extra_create_args)}
        document = request is not None and self.document_form(request)
        if request is not None and not document and request.reply_prefix:
            raise NotSupported("a chat reply cannot be prefilled on a server")
        body: dict[str, Any] = ({"prompt": document_text(messages, request.prefix)} if request is not None and document
                                else {"messages": [as_openai(m) for m in messages]})
        if request is not None and request.stop:
            body["stop"] = list(request.stop)
        text, finish = "", "stop"
        with connection_errors_named():
            stream = await self.sdk.post("/completions" if document else "/chat/completions", cast_to=dict,
                                         body={"model": self.model, **body, **(self.controls or {}), **args,
                                               "stream": True},
                                         stream=True, stream_cls=openai.AsyncStream[dict[str, Any]])
            # the SDK's __aiter__ is an async generator, typed as a plain iterator
            async with aclosing(cast(AsyncGenerator[dict[str, Any], None], stream.__aiter__())) as chunks:
                async for chunk in chunks:
                    choice = first_choice(chunk)
                    piece = choice.get("text") if document else (choice.get("delta") or {}).get("content")
                    finish = choice.get("finish_reason") or finish
                    if piece:
                        text += piece
                        yield piece
        usage = RequestUsage(prompt_tokens=0, completion_tokens=0)  # a stream carries no usage
        result = CreateResult(content=text, usage=usage, cached=False,
                              finish_reason=finish_reason(finish))
        yield result if request is None else continuation_result(text, result.finish_reason, request.sentence, usage)

    async def _send(self, messages: Sequence[LLMMessage], args: dict[str, Any]) -> CreateResult:
        reply = await self._post("/chat/completions", {"messages": [as_openai(m) for m in messages],
                                                       **(self.controls or {}), **args})
        return self._result(reply, first_choice(reply).get("message") or {}, "content")

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST a plain JSON body and read a plain JSON reply (see the module docstring). A streamed
        answer (server-sent events) is read whole and assembled into the reply it stands for. With
        --batch the request waits in its wave instead, asked unstreamed."""
        if self.lane is not None:
            unstreamed = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
            return await self.lane.post(path, {"model": self.model, **unstreamed})
        content = json.dumps({"model": self.model, **body}, ensure_ascii=False, separators=(",", ":"),
                             allow_nan=False).encode()  # as the SDK encodes a body
        url = self.sdk.base_url.join(path) if path.startswith("../") else f"{self.sdk.base_url}{path.lstrip('/')}"
        request = self.http.build_request("POST", url,
                                          params=self.query or None, headers=self.sdk_headers(), content=content)
        with connection_errors_named():
            response = await self._exchange(request)
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                return assembled(response.text)
            reply: dict[str, Any] = response.json()
            return reply

    def sdk_headers(self) -> dict[str, str]:
        """The headers the SDK sends with a request: its key, organisation and project, platform
        headers, the endpoint's own, the retry count (0: moot retries) and the read timeout. Made
        once, in the event loop (the SDK names the async library it runs in)."""
        if self.headers is None:
            timeout = self.sdk.timeout
            read = timeout.read if isinstance(timeout, http.Timeout) else timeout
            sent = {**self.sdk.auth_headers, **self.sdk.default_headers, "x-stainless-retry-count": "0",
                    **({"x-stainless-read-timeout": str(read)} if read is not None else {})}
            self.headers = {k: v for k, v in sent.items() if isinstance(v, str)}  # an Omit: a header not sent
        return self.headers

    async def _exchange(self, request: http.Request) -> http.Response:
        """`request`'s response, failures raised as the SDK raises them (a timeout, a connection
        error, an HTTP status error of the status's class with the server's message). A request
        that found its kept-alive connection closed is sent again at once, once, on another: a
        server may close one after a streamed reply though it said keep-alive (llama.cpp's
        llama-server does, every time), or at its idle timeout as the request goes out."""
        for attempt in (1, 2):
            try:
                response = await self.http.send(request)
                break
            except (http.TimeoutException, *REQUEST_ERRORS) as exc:
                if attempt == 1 and closed_under(exc):
                    continue
                if isinstance(exc, http.TimeoutException):
                    raise openai.APITimeoutError(request=request) from exc
                raise openai.APIConnectionError(request=request) from exc
        if not response.is_success:
            raise self.sdk._make_status_error_from_response(response) from None
        return response

    def _result(self, reply: dict[str, Any], holder: Mapping[str, Any], key: str) -> CreateResult:
        choice = first_choice(reply)
        counts = reply.get("usage") or {}
        usage = RequestUsage(prompt_tokens=tokens(counts.get("prompt_tokens")),
                             completion_tokens=tokens(counts.get("completion_tokens")))
        self.add_usage(usage)
        finish = choice.get("finish_reason")
        content = holder.get(key)
        return CreateResult(content=content if isinstance(content, str) else "", usage=usage, cached=False,
                            finish_reason=finish_reason(finish))

    def document_form(self, request: Request) -> bool:
        """A request is answered as a document (the completions endpoint) when it asks to be, or
        the server's model is a base model (`kind: base`)."""
        return request.document or self.model_kind == "base"

    async def _answer(self, messages: Sequence[LLMMessage], request: Request, args: dict[str, Any]) -> CreateResult:
        document = self.document_form(request)
        if not document and request.reply_prefix:
            raise NotSupported("a chat reply cannot be prefilled on a server")
        if isinstance(request, Continue):
            return await self._continue(messages, request, args)
        if self.no_logprobs:
            raise NotSupported(self.no_logprobs)
        prompt = document_text(messages, request.prefix) if document else ""
        note = self.separators.note(request.texts(), document)  # before a reading may learn one
        width = WIDE_LOGPROBS if document and not self.narrow else TOP_LOGPROBS
        try:
            found = await self._options(messages, request, prompt, document, args, width)
        except Refused as exc:
            if width == TOP_LOGPROBS:
                raise
            # refused: the longer list, maybe not log-probabilities (then the top 20 are refused too)
            self.narrow, self.no_logprobs = str(exc), ""
            found = await self._options(messages, request, prompt, document, args, TOP_LOGPROBS)
        logprobs, bounded, calls = found
        text, detail = (score_detail if isinstance(request, Score) else choice_detail)("top_logprobs", logprobs, bounded)
        detail.update(note)
        used = [c.get("usage") or {} for c in calls]
        usage = RequestUsage(prompt_tokens=sum(int(u.get("prompt_tokens") or 0) for u in used),
                             completion_tokens=sum(int(u.get("completion_tokens") or 0) for u in used))
        self.add_usage(usage)
        return MeasuredResult(content=text, usage=usage, finish_reason="stop", cached=False, detail=detail)

    async def _options(self, messages: Sequence[LLMMessage], request: Union[Choose, Score], prompt: str,
                       document: bool, args: Mapping[str, Any], width: int) -> Options:
        """The options' log-probabilities read from the top `width` of each position, the options
        only bounded, and the replies read (moot.models.server_likelihood)."""
        calls: list[dict[str, Any]] = []

        async def top(extension: str) -> dict[str, float]:
            reply = await self._top_logprobs(messages, prompt + extension, document, args, width)
            calls.append(reply)
            return first_top_logprobs(reply, document)

        try:
            logprobs, bounded = await self.separators.read(top, request.texts(), extendable=document,
                                                           number=isinstance(request, Score))
        except openai.APIStatusError as exc:
            if exc.status_code not in (400, 404, 422, 500):
                raise
            self.no_logprobs = f"the server refused log-probabilities (HTTP {exc.status_code})"
            raise Refused(self.no_logprobs) from None
        except NoLogprobs as exc:  # missing or unreadable: so it will be on every call to this server
            self.no_logprobs = str(exc)
            raise
        return logprobs, bounded, calls

    async def _top_logprobs(self, messages: Sequence[LLMMessage], prompt: str, document: bool,
                            args: Mapping[str, Any], width: int = TOP_LOGPROBS) -> dict[str, Any]:
        """One token, greedy, with the top log-probabilities of its position; asked streamed:
        llama-cpp-python's server (0.3.x) computes an unstreamed reply's log-probabilities over
        its whole context times the vocabulary (seconds per answer on a long document, 262,144
        tokens for Gemma 3), a streamed one's from the generated token's row alone."""
        body = {"max_tokens": 1, "temperature": 0, "stream": True, "stream_options": {"include_usage": True},
                **({"seed": args["seed"]} if args.get("seed") is not None else {})}
        if document:
            return await self._post("/completions", {"prompt": prompt, "logprobs": width, **body})
        return await self._post("/chat/completions", {"messages": [as_openai(m) for m in messages],
                                                      "logprobs": True, "top_logprobs": width, **body})

    async def _continue(self, messages: Sequence[LLMMessage], request: Continue, args: dict[str, Any]) -> CreateResult:
        stop = {"stop": list(request.stop)} if request.stop else {}
        document = self.document_form(request)
        if document and self.controls is not None:
            result = await self._controlled(document_text(messages, request.prefix), request, args)
            return served_continuation(result, request, applied=True)
        if document:
            body = {"prompt": document_text(messages, request.prefix), **args, **stop}
            result = await self._completion(body)
            if not str(result.content).strip() and (request.min_tokens or request.ban_first):
                result = await self._begun(body, result)
        else:
            result = await self._send(messages, {**args, **stop})
        return served_continuation(bound_reply(result, args.get("max_tokens")), request)

    async def _controlled(self, prompt: str, request: Continue, args: dict[str, Any]) -> CreateResult:
        """A document continued under the request's rules in llama-server's fields (moot.models.backends.openai.llama_controls)."""
        async def post(body: dict[str, Any]) -> dict[str, Any]:
            return await self._post("/completions", body)

        async def tokenize(text: str) -> list[int]:
            reply = await self._post("../tokenize", {"content": text, "add_special": True})
            found = reply.get("tokens")
            if not isinstance(found, list) or not all(isinstance(t, int) for t in found):
                raise NotSupported("the server's /tokenize returned no token list")
            return found

        text, finish, usage = await controlled_turn(post, tokenize, prompt, request, {**(self.controls or {}), **args})
        self.add_usage(usage)
        return bound_reply(CreateResult(content=text, usage=usage, cached=False, finish_reason=finish_reason(finish)),
                           args.get("max_tokens"))

    async def _completion(self, body: dict[str, Any]) -> CreateResult:
        reply = await self._post("/completions", body)
        return self._result(reply, first_choice(reply), "text")

    async def _begun(self, body: dict[str, Any], empty: CreateResult) -> CreateResult:
        """A turn that ended before it began (a server applies no processors: a base model may
        write the blank line first), begun again with its first token anything but a newline,
        then continued from there as asked: the embedded model's `ban_first` for newlines, in two
        requests (the second reuses the server's cache of the prompt). Newlines are banned by
        text: llama.cpp's llama-server tokenizes a `logit_bias` key that is not a number; a server
        that refuses that keeps the empty reply (retried as any empty reply)."""
        try:
            first = await self._completion({**body, "max_tokens": 1, "logit_bias": NEWLINES})
        except openai.APIStatusError:
            return empty
        begun = str(first.content)
        if not begun.strip():
            return empty
        rest = await self._completion({**body, "prompt": body["prompt"] + begun,
                                       **({"max_tokens": body["max_tokens"] - 1} if body.get("max_tokens") else {})})
        usage = RequestUsage(prompt_tokens=first.usage.prompt_tokens + rest.usage.prompt_tokens,
                             completion_tokens=first.usage.completion_tokens + rest.usage.completion_tokens)
        return rest.model_copy(update={"content": begun + str(rest.content), "usage": usage})

    async def close(self) -> None:
        await self.sdk.close()


def closed_under(exc: BaseException) -> bool:
    """Whether `exc` (or what caused it) is a connection the server closed under the request,
    rather than one that could not be made or a timeout."""
    found: Optional[BaseException] = exc
    while found is not None:
        if isinstance(found, aiohttp.ClientConnectorError):
            return False
        if isinstance(found, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError, ConnectionResetError,
                              BrokenPipeError)):
            return True
        found = found.__cause__ or found.__context__
    return False


def assembled(events: str) -> dict[str, Any]:
    """The reply a stream of completion chunks (server-sent events) adds up to, as far as a closed
    answer reads it: the first chunk's choice that carries log-probabilities (else the first
    choice), and the usage a last chunk may report. A line that is no JSON object is skipped."""
    choices: list[dict[str, Any]] = []
    usage: Any = None
    for line in events.splitlines():
        data = line[len("data:"):].strip() if line.startswith("data:") else ""
        chunk = json_object(data) if data.startswith("{") else None
        if chunk is None:
            continue
        usage = chunk.get("usage") or usage
        choice = first_choice(chunk)
        if isinstance(choice, dict) and choice and (not choices or (choice.get("logprobs") and not choices[0].get("logprobs"))):
            choices = [choice]
    return {"choices": choices, **({"usage": usage} if usage else {})}


def first_choice(reply: Mapping[str, Any]) -> dict[str, Any]:
    """A completion's (or a stream chunk's) first choice; {} when it has none."""
    choice: dict[str, Any] = (reply.get("choices") or [{}])[0]
    return choice


def finish_reason(finish: Any) -> FinishReasons:
    """The server's finish reason as AutoGen names it ("unknown" for anything else)."""
    known: tuple[FinishReasons, ...] = ("stop", "length", "content_filter")
    return next((reason for reason in known if reason == finish), "unknown")


def first_top_logprobs(reply: Mapping[str, Any], document: bool) -> dict[str, float]:
    """{token: logprob} of the first generated position ({} when the server sent none), in either
    shape a server may use: the chat shape (`logprobs.content[0].top_logprobs`, a list of
    {token, logprob}: chat replies, and llama.cpp's llama-server for completions too) or the
    legacy completions shape (`logprobs.top_logprobs[0]`, {token: logprob}: OpenAI, vLLM,
    llama-cpp-python's server). Anything else than a list of tokens with readable
    log-probabilities is NoLogprobs (one path for every unreadable answer: moot.models.server_likelihood)."""
    try:
        logprobs = first_choice(reply).get("logprobs") or {}
        if document and "content" not in logprobs:
            tops = logprobs.get("top_logprobs") or [{}]
            return {str(t): logprob(lp) for t, lp in (tops[0] or {}).items()}
        content = logprobs.get("content") or [{}]
        return {str(t["token"]): logprob(t["logprob"]) for t in (content[0].get("top_logprobs") or [])}
    except (AttributeError, IndexError, KeyError, TypeError) as exc:
        raise NoLogprobs(f"the server's log-probabilities are unreadable ({type(exc).__name__}: {exc})"[:200]) from None
