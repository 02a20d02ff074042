"""llama.cpp's own server (`llama-server`), built from a registry package and run on loopback.

Researchers who run local models use llama-server (Ollama and LM Studio embed it): it computes
top-N log-probabilities in C++, serves parallel slots with continuous batching, and reuses prompt
caches. moot talks to it as to any OpenAI-compatible server (`openai:NAME` with its `/v1` URL;
`backends.openai.kind: base` for a base model such as the bundled Gemma).

Getting it (`moot llama-server --build`): the source is the llama.cpp tree that the
llama-cpp-python sdist vendors (MIT), the same version moot's embedded model runs, downloaded with
pip (PyPI or the user's index) and built with CMake, for the CPU family rather than this CPU
(x86-64: AVX2, FMA, F16C, BMI2; no `-march=native`, whose AMX kernels fault on some Xeons), without
tests, examples, the prebuilt web UI (a download) or TLS. The binary is kept in moot's cache folder
(moot.models.backends.local.extra_buffers.store_path's), per llama-cpp-python version, machine and flags: a
second call returns it at once. About 7 minutes on 2 cores.

`LlamaServer` runs one on a free loopback port for a `with` block (the command line, tests and
benchmarks), with weight repacking as the embedded model's extra-buffer choice says, and a
full-size sliding-window cache (`--swa-full`, as llama-cpp-python opens the embedded model's):
without it Gemma 3's sliding-window layers keep only their last 512 positions, so a prompt that
goes on from a longer one it shares a prefix with is evaluated again whole (COLA, debate and S2MAD
through 4 slots: 3,603, 4,394 and 4,289 prompt tokens evaluated against 2,215, 3,495 and 2,500
with it, benchmarks/bench_items.py --server).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from contextlib import closing
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import IO, Any, Callable, Optional, Sequence

from moot.errors import MootError
from moot.models.backends.local.cores import usable_cores
from moot.models.backends.local.extra_buffers import store_path

X86_64 = ["-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DGGML_BMI2=ON"]
CPU_FLAGS = {"x86_64": X86_64, "amd64": X86_64}
CMAKE_FLAGS = ["-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF", "-DBUILD_SHARED_LIBS=OFF",
               "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_TOOLS=ON",
               "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF"]
SOURCE = "llama-cpp-python"
READY_S = 120.0  # a server that is not healthy this long after it started has failed


class BuildError(MootError):
    """llama-server could not be built (a tool missing, the download or the build failed): one line."""

    exit_code = 3


def flags() -> list[str]:
    return CMAKE_FLAGS + CPU_FLAGS.get(platform.machine().lower(), [])


def cached_binary() -> Path:
    """Where the binary for this llama-cpp-python version, machine and build flags is kept."""
    version = metadata.version(SOURCE)
    digest = hashlib.sha256(" ".join([platform.machine(), *flags()]).encode()).hexdigest()[:12]
    return store_path().parent / "llama-server" / f"{version}-{platform.machine()}-{digest}" / "llama-server"


def binary(build: bool = True, say: Callable[[str], None] = print) -> Path:
    """$MOOT_LLAMA_SERVER (a llama-server of the user's own), else the cached one, built first
    when there is none and `build` allows."""
    own = os.environ.get("MOOT_LLAMA_SERVER")
    if own:
        if not Path(own).is_file():
            raise BuildError(f"MOOT_LLAMA_SERVER={own}: no such file")
        return Path(own)
    found = cached_binary()
    if found.is_file():
        return found
    if not build:
        raise BuildError(f"no llama-server built yet ({found}): run `moot llama-server --build`")
    return build_server(found, say)


def build_server(target: Path, say: Callable[[str], None] = print) -> Path:
    """Download the llama-cpp-python sdist, build its llama.cpp's llama-server, keep the binary at `target`."""
    cmake = shutil.which("cmake") or shutil.which("cmake", path=str(Path(sys.executable).parent))
    if cmake is None:
        raise BuildError("llama-server needs CMake to build: install it (`pip install cmake`, or your system's package)")
    version = metadata.version(SOURCE)
    target.parent.mkdir(parents=True, exist_ok=True)
    log = target.with_name("build.log")
    with tempfile.TemporaryDirectory(prefix="moot-llama-server-") as tmp, open(log, "w") as out:
        say(f"downloading the {SOURCE} {version} source (it vendors llama.cpp) ...")
        step([sys.executable, "-m", "pip", "download", f"{SOURCE}=={version}", "--no-deps", "--no-binary", ":all:",
              "-d", tmp], out, log, "the download")
        source = unpacked(next(Path(tmp).glob("*.tar.gz")), Path(tmp) / "src")
        jobs = str(usable_cores())
        say(f"building llama-server with {jobs} job(s) (about 7 minutes on 2 cores; log: {log}) ...")
        build = Path(tmp) / "build"
        step([cmake, "-S", str(source), "-B", str(build), *flags()], out, log, "CMake's configuration")
        step([cmake, "--build", str(build), "--target", "llama-server", "-j", jobs], out, log, "the build")
        made = build / "bin" / "llama-server"
        partial = target.with_name(target.name + ".partial")
        shutil.copy2(made, partial)
        os.replace(partial, target)  # whole or not at all
    say(f"built {target}")
    return target


def step(command: list[str], out: IO[str], log: Path, what: str) -> None:
    done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise BuildError(f"llama-server: {what} failed (exit {done.returncode}); its output is in {log}")


def unpacked(archive: Path, into: Path) -> Path:
    """The llama.cpp tree of the sdist `archive`, extracted under `into` (members only as data:
    no links out of it, no devices, no permissions beyond the user's)."""
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if "/vendor/llama.cpp/" in m.name + "/"]
        try:
            tar.extractall(into, members=members, filter="data")
        except tarfile.FilterError as exc:
            raise BuildError(f"{archive.name}: a member that is not plain data ({exc}); nothing was built") from None
    found = next(into.glob("*/vendor/llama.cpp"), None)
    if found is None:
        raise BuildError(f"{archive.name} holds no vendor/llama.cpp tree")
    return found


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LlamaServer:
    """llama-server serving `model` on a free loopback port, for a `with` block: `url` is its
    OpenAI-compatible base URL. `repack`: llama.cpp's extra buffer types (weight repacking);
    `chat_template`: one of llama.cpp's built-in templates by name (e.g. `gemma`), for a GGUF that
    has none; `metrics`: serve Prometheus counters at /metrics; `extra`: further llama-server flags."""

    def __init__(self, model: str, *, parallel: int = 1, ctx: int = 8192, threads: Optional[int] = None,
                 repack: bool = True, port: Optional[int] = None, log: Optional[Path] = None,
                 chat_template: Optional[str] = None, server: Optional[Path] = None, metrics: bool = False,
                 extra: Sequence[str] = ()):
        self.model = model
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        threads = threads or usable_cores()
        self.command = [str(server or binary(build=False)), "-m", model, "--host", "127.0.0.1",
                        "--port", str(self.port), "-c", str(ctx * parallel), "-np", str(parallel),
                        "-t", str(threads), "-tb", str(threads), "--no-webui", "--swa-full",
                        *([] if repack else ["--no-repack"]),
                        *(["--no-jinja", "--chat-template", chat_template] if chat_template else []),
                        *(["--metrics"] if metrics else []), *extra]
        self.proc: Optional[subprocess.Popen[bytes]] = None

    def start(self) -> "LlamaServer":
        with open(self.log if self.log else os.devnull, "ab") as sink:  # the server keeps its own copy
            self.proc = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        if not self.healthy():
            self.stop()
            raise BuildError(f"llama-server did not become healthy within {READY_S:g}s"
                             + (f"; its output is in {self.log}" if self.log else ""))
        return self

    def healthy(self, within: float = READY_S) -> bool:
        """Whether it answers /health with 200 within `within` seconds (False once it exited)."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
        deadline = time.monotonic() + within
        while time.monotonic() < deadline and self.proc is not None and self.proc.poll() is None:
            try:
                with opener.open(f"http://127.0.0.1:{self.port}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> "LlamaServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass(frozen=True)
class EmbeddedModel:
    """The embedded model as moot loads it by default: its GGUF, context size and extra-buffer choice."""

    path: str
    n_ctx: int
    extra_buffers: bool


def embedded_model() -> EmbeddedModel:
    from moot.models.backends.local.extra_buffers import choose
    from moot.models.backends.local.client import default_model_path
    from moot.models.backends.local.provider import LocalBackend

    block, path = LocalBackend(), default_model_path()
    return EmbeddedModel(path, block.n_ctx, choose(block.extra_buffers, path).use)


def embedded_server(log: Optional[Path] = None, **kwargs: Any) -> LlamaServer:
    """llama-server serving the embedded model as moot loads it: its GGUF, its context size per
    slot unless `kwargs` say `ctx`, weight repacking as the extra-buffer choice says (`kwargs`:
    LlamaServer's other settings)."""
    model = embedded_model()
    return LlamaServer(model.path, **{"ctx": model.n_ctx, **kwargs}, repack=model.extra_buffers, log=log)
