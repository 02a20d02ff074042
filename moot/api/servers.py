"""llama.cpp's own server from Python (`moot llama-server`): built once from a registry package,
serving a GGUF (default: the embedded Gemma 3 270M) on loopback for moot's OpenAI backend
(moot.models.backends.local.llama_server says how it is built)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from moot.errors import UsageError

if TYPE_CHECKING:
    from moot.models.backends.local.llama_server import LlamaServer


@dataclass(frozen=True)
class ServerOptions:
    """How the server serves: `port` on 127.0.0.1 (0: a free one), `parallel` slots decoding together,
    `ctx` context tokens per slot, `threads` (None: the usable cores), `log` its own output's file.
    Values out of range are refused (UsageError)."""

    port: int = 8080
    parallel: int = 1
    ctx: int = 8192
    threads: Optional[int] = None
    log: Optional[Path] = None

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535 or self.parallel < 1 or self.ctx < 512:
            raise UsageError("--port must be 0-65535, --parallel at least 1 and --ctx at least 512")


def llama_server_binary() -> Path:
    """The llama-server binary: $MOOT_LLAMA_SERVER, else the cached one, built first when there is none."""
    from moot.models.backends.local.llama_server import binary

    return binary(build=True)


def llama_server(model: Optional[str] = None, options: ServerOptions = ServerOptions()) -> "LlamaServer":
    """The server for `model` (a GGUF file; default: the embedded model), built once; a `with` block
    runs it, its `url` the base URL to give moot (`--model openai:NAME --base-url URL`)."""
    from moot.models.backends.local.extra_buffers import choose
    from moot.models.backends.local.llama_server import LlamaServer
    from moot.models.backends.local.client import default_model_path

    llama_server_binary()
    served = model or default_model_path()
    if not Path(served).is_file():
        raise UsageError(f"--model {served}: no such file")
    return LlamaServer(served, parallel=options.parallel, ctx=options.ctx, threads=options.threads,
                       repack=choose("auto", served).use, port=options.port or None, log=options.log)
