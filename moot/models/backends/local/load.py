"""Loading a GGUF into llama.cpp in this process: the embedded model's process does it
(moot.models.backends.local.worker), and so do tests and benchmarks that measure llama.cpp itself.

The model is loaded with `chat_format=None`, so an instruction GGUF is driven with its own
template (llama-cpp-python picks a built-in formatter when the template is a known one, else
renders the GGUF's Jinja template); a Gemma GGUF without a template keeps the Gemma turn markup
for plain chat calls. Extra buffer types (moot.models.backends.local.extra_buffers) are used or not as the
caller says: llama-cpp-python's constructor has no parameter for them, so the model parameters
it starts from are given the flag while it loads.
"""

from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, Iterator, Mapping, Optional

from moot.models.backends.local.cores import IdleCores, ModelLock, system_sample
from moot.models.backends.local.kv import open_sequences

_LOADING = threading.Lock()  # the patched default parameters are the process's while one model loads


@dataclass(frozen=True)
class Loaded:
    """A loaded model, the lock that serialises its requests, and whether it uses extra buffers."""

    llm: Any
    lock: ModelLock
    extra_buffers: bool


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


@contextmanager
def extra_buffer_types(use: bool) -> Iterator[None]:
    """llama-cpp-python's model parameters with `use_extra_bufts` set to `use`, while a model loads."""
    from llama_cpp import llama_cpp as native

    default = native.llama_model_default_params

    def params() -> Any:
        found = default()
        found.use_extra_bufts = use
        return found

    with _LOADING:
        native.llama_model_default_params = params
        try:
            yield
        finally:
            native.llama_model_default_params = default


@lru_cache(maxsize=4)
def load_llama(path: str, n_ctx: int, n_threads: Optional[int], n_gpu_layers: int = 0,
               extra_buffers: bool = False, family: tuple[int, ...] = ()) -> Loaded:
    """Load a GGUF once per process, with the lock that serialises its requests (and, unless
    `n_threads` fixes it, sets their thread count from the cores idle but for this process and
    the processes in `family`: moot.models.backends.local.cores)."""
    from llama_cpp import Llama

    idle: Optional[IdleCores] = None  # a count the setting fixes is never changed
    if n_threads:
        threads = n_threads
    else:
        idle = IdleCores(sample=partial(system_sample, family))
        threads = idle.threads
    with native_stderr_silenced():
        with extra_buffer_types(extra_buffers):
            llm = Llama(model_path=path, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                        n_gpu_layers=n_gpu_layers, chat_format=None, verbose=False, seed=0)
        open_sequences(llm)
    if not has_chat_template(llm.metadata) and llm.metadata.get("general.architecture", "").startswith("gemma"):
        llm.chat_format = "gemma"  # llama-cpp-python's fallback would be Llama 2's [INST] markup
    return Loaded(llm, ModelLock(llm, threads, idle), extra_buffers)


def has_chat_template(metadata: Mapping[str, str]) -> bool:
    return "tokenizer.chat_template" in metadata or any(k.startswith("tokenizer.chat_template.") for k in metadata)
