"""The embedded backend (`local`, `local:PATH.gguf`): llama.cpp in a child process of this one."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Annotated, Any, Literal, Mapping, Optional

from pydantic import BeforeValidator, Field

from moot.models.provider import BackendOptions, MissingKey, ModelSpec, Options, Provider

if TYPE_CHECKING:
    from autogen_core.models import ChatCompletionClient

    from moot.models.backends.local.process import LocalConfig

CLIENT = "moot.models.backends.local.client"


def on_off(value: object) -> object:
    """YAML 1.1 (PyYAML's) reads a bare `on` or `off` as true or false: take them back as written."""
    return {True: "on", False: "off"}[value] if isinstance(value, bool) else value


class LocalBackend(Options):
    """The in-process llama.cpp backend (`local`, `local:PATH.gguf`)."""

    n_ctx: Annotated[int, Field(ge=512, le=131072)] = 8192
    """Context window in tokens."""
    n_threads: Optional[Annotated[int, Field(ge=1, le=256)]] = None
    """CPU threads for generation and prompt evaluation; null: chosen before each request from the
    cores other processes leave idle (on a 2-core machine 2 threads were 1.5-2x faster than 1 when
    it was idle, and 2-4x slower when other work ran)."""
    n_gpu_layers: Annotated[int, Field(ge=-1)] = 0
    """Layers offloaded to a GPU (-1: all) when llama.cpp was built with GPU support; a CPU-only
    build ignores it."""
    kind: Literal["auto", "base", "instruct"] = "auto"
    """`auto`: a GGUF with a chat template is an instruction model, one without a base model;
    `base` / `instruct` say so (some base models ship a template)."""
    extra_buffers: Annotated[Literal["auto", "on", "off"], BeforeValidator(on_off)] = "auto"
    """llama.cpp's extra buffer types (Intel AMX tiles, weights repacked for AVX2/AVX-512 or Arm).
    They crash on some CPUs (a segfault on Intel Xeons with AMX). `auto`: used when a check in a
    child process loads the model with them and decodes safely; its answer is kept per machine,
    llama.cpp build and model file, and a crash with them turns them off. `on` / `off` force it."""


def model_file(spec: ModelSpec) -> str:
    """The GGUF file `spec` names, else the bundled model's."""
    return spec.model or importlib.import_module(CLIENT).default_model_path()


def local_config(spec: ModelSpec, options: BackendOptions) -> LocalConfig:
    """What the embedded model's process for `spec` is started with."""
    from moot.models.backends.local.process import LocalConfig

    path, block = model_file(spec), options.of(LOCAL)
    if not os.path.isfile(path):
        raise ValueError(f"local model file not found: {path}")
    return LocalConfig(path, block.n_ctx, block.n_threads, block.n_gpu_layers, block.extra_buffers)


def build(spec: ModelSpec, settings: Mapping[str, Any], options: BackendOptions,
          address: Optional[str]) -> ChatCompletionClient:
    client: ChatCompletionClient = importlib.import_module(CLIENT).LocalChatCompletionClient(
        local_config(spec, options), settings, options.of(LOCAL).kind)
    return client


def preflight(spec: ModelSpec, options: BackendOptions) -> None:
    if spec.model and not os.path.isfile(spec.model):
        raise MissingKey(f"local model file not found: {spec.model}")


def public(options: BackendOptions) -> dict[str, Any]:
    return {"local_n_ctx": options.of(LOCAL).n_ctx}


LOCAL = Provider("local", LocalBackend, CLIENT, build, preflight=preflight, public=public, local=True,
                 model_file=model_file)
