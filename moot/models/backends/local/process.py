"""The embedded model runs in a child process that moot supervises, as Ollama and llama-server do.

llama.cpp is native code: a crash in it (a segfault in a CPU-specific kernel, an abort on a
failed assertion) would end the whole Python process at once, with nothing written and nothing
said. In a child process (moot.models.backends.local.worker) a crash ends only the model. The calls
waiting on it fail with `ModelCrashed`, a fatal call error, so the run is saved as failed with
its cause and resumes when the same command is run again. The cause is one line: the model file,
the signal, the end of what the process wrote on stderr, and the setting that avoids the crash.
A crash with extra buffers on under `auto` turns them off for this machine (moot.models.backends.local.extra_buffers).

One process per model configuration (file, context, threads, layers, extra buffers) serves every
client of this process; one that died is replaced by the next call. Requests and replies are lines
of JSON on its standard input and output. A reader thread hands each reply to the event loop of
the call that waits for it; text arrives as it is generated. Stopping a call (cancelled, timed
out, closed) tells the process to stop it, at its next token.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass
from typing import IO, Any, Optional, Union

from moot.models.calls import FatalModelError
from moot.models.backends.local.extra_buffers import Choice, Setting, choose, exit_cause, remember_crash
from moot.models.requests import MeasuredResult, NotSupported
from moot.safety.neutral import terminal_safe

STDERR_LINES = 40  # the end of the process's stderr kept for the cause of a crash
TELLING = re.compile(r"error|assert|abort|fail", re.IGNORECASE)  # a line of it that says what went wrong
# Signals of native code gone wrong (not a kill from outside, such as the kernel's out-of-memory killer)
NATIVE_CRASHES = frozenset({signal.SIGSEGV, signal.SIGILL, signal.SIGBUS, signal.SIGFPE, signal.SIGABRT})


class ModelCrashed(FatalModelError):
    """The embedded model's process died: every call it was answering fails with this cause. No
    retry in this run (a crash may repeat: the user reads why), but the same command continues."""

    resumes = True


class WorkerError(RuntimeError):
    """A request failed in the model's process with a Python error (its type and message)."""


class Stopped(Exception):
    """The model's process stopped a request before its result, as asked."""


Reply = Union[str, MeasuredResult, BaseException]  # what a waiting call receives: text, the result, or why not


@dataclass(frozen=True)
class LocalConfig:
    """What a model process is started with (one process per configuration)."""

    path: str
    n_ctx: int = 8192
    n_threads: Optional[int] = None
    n_gpu_layers: int = 0
    extra_buffers: Setting = "auto"


@dataclass
class Waiting:
    """A call waiting for its replies, on its own event loop."""

    loop: asyncio.AbstractEventLoop
    replies: asyncio.Queue[Reply]

    def put(self, reply: Reply) -> None:
        try:
            self.loop.call_soon_threadsafe(self.replies.put_nowait, reply)
        except RuntimeError:  # its loop is closed: nobody waits any more
            pass


class ModelProcess:
    """One running model process and the calls waiting on it."""

    def __init__(self, config: LocalConfig, choice: Choice, command: Optional[list[str]] = None):
        self.config, self.choice = config, choice
        argv = command or worker_command(config, choice)
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True)  # a Ctrl-C is the parent's to handle, not the model's
        self.info: dict[str, Any] = {}
        self.crash: Optional[ModelCrashed] = None
        self._ready = threading.Event()
        self._ids = itertools.count(1)
        self._waiting: dict[int, Waiting] = {}
        self._lock = threading.Lock()
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)
        assert self.proc.stdout is not None and self.proc.stderr is not None  # both piped
        threading.Thread(target=self._read, args=(self.proc.stdout,), name="moot-model-replies", daemon=True).start()
        threading.Thread(target=self._keep_stderr, args=(self.proc.stderr,), name="moot-model-stderr",
                         daemon=True).start()

    def ready(self) -> dict[str, Any]:
        """What the process said once loaded (waits for it); raises ModelCrashed if it died."""
        self._ready.wait()
        if self.crash is not None:
            raise self.crash
        return self.info

    def loaded(self) -> bool:
        """Whether the process has said it is loaded, or has died."""
        return self._ready.is_set()

    def submit(self, payload: dict[str, Any]) -> tuple[int, asyncio.Queue[Reply]]:
        """Send a request; its replies arrive on the queue returned, in the caller's event loop."""
        waiting = Waiting(asyncio.get_running_loop(), asyncio.Queue())
        with self._lock:
            if self.crash is not None:
                raise self.crash
            ident = next(self._ids)
            self._waiting[ident] = waiting
            self._send({"id": ident, **payload})
        return ident, waiting.replies

    def stop(self, ident: int) -> None:
        """Ask the process to stop request `ident` (nothing if it has ended)."""
        with self._lock:
            if ident in self._waiting and self.crash is None:
                self._send({"stop": ident})

    def _send(self, message: dict[str, Any]) -> None:
        """Under the lock. A process that has died is found by the reader, which fails its calls."""
        assert self.proc.stdin is not None  # piped
        try:
            self.proc.stdin.write(json.dumps(message, ensure_ascii=True).encode("ascii") + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass

    def _read(self, source: IO[bytes]) -> None:
        """Hand each reply to its call until the process's output ends (a line torn by a crash is
        passed over: the end that follows fails the calls)."""
        for line in source:
            try:
                message = json.loads(line)
                ident = None if "ready" in message else int(message["id"])
            except (ValueError, TypeError, KeyError):
                continue
            if ident is None:
                self.info = message["ready"]
                self._ready.set()
            else:
                self._deliver(ident, message)
        self._died(self.proc.wait())

    def _deliver(self, ident: int, message: dict[str, Any]) -> None:
        reply: Reply
        if "text" in message:
            reply = str(message["text"])
        elif "result" in message:
            try:
                reply = MeasuredResult.model_validate(message["result"])
            except ValueError as exc:  # pydantic's ValidationError is one
                reply = WorkerError(f"the model's process sent an unreadable result ({str(exc)[:200]})")
        elif "stopped" in message:
            reply = Stopped()
        else:
            reply = error_of(message.get("error") or {})
        with self._lock:
            waiting = self._waiting.get(ident) if isinstance(reply, str) else self._waiting.pop(ident, None)
        if waiting is not None:
            waiting.put(reply)

    def _died(self, returncode: int) -> None:
        """The process ended: every waiting call (and every later one) fails with the cause."""
        with self._lock:
            crash = self.crash = ModelCrashed(self._cause(returncode), 1)
            waiting, self._waiting = list(self._waiting.values()), {}
        self._ready.set()
        for call in waiting:
            call.put(crash)

    def _cause(self, returncode: int) -> str:
        """One line: which model died how, what it last said, and what avoids it."""
        said = next((line for line in reversed(self._stderr) if TELLING.search(line)), "")
        loading = "" if self._ready.is_set() else " while loading"
        where = f"the embedded model ({os.path.basename(self.config.path)}, llama.cpp in process {self.proc.pid})"
        return terminal_safe(f"{where} {exit_cause(returncode)}{loading}"
                             f"{': ' + said.strip()[:200] if said else ''}{self._advice(returncode)}")

    def _advice(self, returncode: int) -> str:
        if not self.choice.use or -returncode not in NATIVE_CRASHES:
            return ""
        if self.config.extra_buffers == "auto":
            remember_crash(self.config.path, f"the model's process {exit_cause(returncode)} with them")
            return ("; it ran with llama.cpp's extra buffer types (AMX or repacked weights), which crash on some "
                    "CPUs: on this machine the model now loads without them")
        return ("; it ran with llama.cpp's extra buffer types (backends.local.extra_buffers: on), which crash on "
                "some CPUs: set it to off or auto")

    def _keep_stderr(self, source: IO[bytes]) -> None:
        for line in source:
            self._stderr.append(line.decode("utf-8", "replace").rstrip("\n"))


def error_of(error: dict[str, Any]) -> BaseException:
    """The exception a request failed with in the model's process, raised again here."""
    kind, message = str(error.get("type", "")), str(error.get("message", ""))
    if kind == NotSupported.__name__:
        return NotSupported(message)
    return WorkerError(f"{kind}: {message}")


def worker_command(config: LocalConfig, choice: Choice) -> list[str]:
    argv = [sys.executable, "-m", "moot.models.backends.local.worker", config.path, "--n-ctx", str(config.n_ctx),
            "--n-gpu-layers", str(config.n_gpu_layers), "--extra-buffers", "on" if choice.use else "off"]
    return argv + (["--n-threads", str(config.n_threads)] if config.n_threads else [])


_PROCESSES: dict[LocalConfig, ModelProcess] = {}
_STARTING = threading.Lock()


def process_for(config: LocalConfig) -> ModelProcess:
    """The running process for `config`, started (after the extra-buffer choice) if there is none
    or it died."""
    with _STARTING:
        found = _PROCESSES.get(config)
        if found is None or found.crash is not None:
            found = _PROCESSES[config] = ModelProcess(config, choose(config.extra_buffers, config.path))
        return found
