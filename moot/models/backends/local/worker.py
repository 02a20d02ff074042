"""The embedded model's process: llama.cpp serving moot's requests over a pipe.

`python -m moot.models.backends.local.worker PATH --n-ctx N [--n-threads T] [--n-gpu-layers L]
--extra-buffers on|off` loads the GGUF (moot.models.backends.local.load) and answers the requests of the
process that started it (moot.models.backends.local.process), one at a time and in order of arrival, with
moot.models.backends.local.requests. One JSON object per line each way:

- in: `{"id": n, "messages": [...], "request": {...} | null, "sampling": {...}, "kind": "base" |
  "instruct", "stream": bool}` asks; `{"stop": n}` stops request n (queued: it is skipped;
  running: it ends at its next token);
- out: `{"ready": {...}}` once the model is loaded; then per request `{"id": n, "text": "..."}`
  chunks (when it streams), and one of `{"id": n, "result": {...}}`, `{"id": n, "stopped": true}`,
  `{"id": n, "error": {"type": ..., "message": ...}}`.

Its standard output carries only these lines: whatever else writes to file descriptor 1 goes to
its standard error, which the parent keeps the end of for the line it reports if this process
dies. It ends when its input closes (the parent is gone), even in the middle of a request.

`--check PATH` is the extra-buffer check (moot.models.backends.local.extra_buffers): load PATH with extra
buffers, decode a prompt and a few tokens, exit 0.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import threading
from contextlib import closing
from typing import Any, BinaryIO, Optional, Sequence

from autogen_core.models import CreateResult, LLMMessage
from pydantic import TypeAdapter

from moot.models.backends.local.load import Loaded, has_chat_template, load_llama
from moot.models.backends.local.requests import LocalAnswers, Sampling
from moot.models.requests import REQUEST_ARG, request_of

MESSAGES: TypeAdapter[list[LLMMessage]] = TypeAdapter(list[LLMMessage])
CHECK_TEXT = ("Transcript of a decision conference on drug policy.\n\nModerator: Welcome. Today we weigh "
              "harm reduction against enforcement, and what each would cost.\n\nDr. Weber:")


class Channel:
    """Lines of JSON to the parent, one writer at a time."""

    def __init__(self, out: BinaryIO):
        self.out, self.lock = out, threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=True).encode("ascii") + b"\n"
        with self.lock:
            self.out.write(line)
            self.out.flush()


class Server:
    """Requests read by one thread, answered in order by another."""

    def __init__(self, loaded: Loaded, channel: Channel):
        self.loaded, self.channel = loaded, channel
        self.waiting: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stops: dict[int, threading.Event] = {}
        self.lock = threading.Lock()

    def listen(self, source: BinaryIO) -> None:
        """Read requests and stops until the input closes, then end the process at once."""
        for line in source:
            message = json.loads(line)
            with self.lock:
                if "stop" in message:
                    found = self.stops.get(message["stop"])
                    if found is not None:
                        found.set()
                    continue
                self.stops[message["id"]] = threading.Event()
            self.waiting.put(message)
        os._exit(0)

    def serve(self) -> None:
        while True:
            self.answer(self.waiting.get())

    def answer(self, message: dict[str, Any]) -> None:
        ident = message["id"]
        with self.lock:
            stop = self.stops[ident]
        try:
            result = None if stop.is_set() else self.run(ident, message, stop)
            self.channel.send({"id": ident, "result": result.model_dump(mode="json")} if result is not None
                              else {"id": ident, "stopped": True})
        except Exception as exc:  # noqa: BLE001 - the parent raises it for this request; others go on
            self.channel.send({"id": ident, "error": {"type": type(exc).__name__, "message": str(exc)}})
        finally:
            with self.lock:
                del self.stops[ident]

    def run(self, ident: int, message: dict[str, Any], stop: threading.Event) -> Optional[CreateResult]:
        """The request's result (None if it was stopped first), its text sent on as generated."""
        answers = LocalAnswers(self.loaded, str(message["kind"]))
        request = request_of({REQUEST_ARG: message["request"]}) if message.get("request") else None
        sampling: Sampling = message["sampling"]
        result = None
        with closing(answers.stream(MESSAGES.validate_python(message["messages"]), request, sampling, stop)) as items:
            for item in items:
                if stop.is_set():
                    return None
                if not isinstance(item, str):
                    result = item
                elif message.get("stream"):
                    self.channel.send({"id": ident, "text": item})
        return result


def protocol_channel() -> Channel:
    """This process's standard output as the channel, file descriptor 1 pointed at standard error
    so that nothing else (a library's print) can write into it."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return Channel(out)


def check(path: str) -> int:
    """The extra-buffer check: load with extra buffers, decode a prompt and a few tokens."""
    loaded = load_llama(path, 2048, None, 0, extra_buffers=True)
    tokens = loaded.llm.tokenize(CHECK_TEXT.encode("utf-8"))
    loaded.llm.create_completion(tokens, max_tokens=8, temperature=0.0)
    return 0


def arguments(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m moot.models.backends.local.worker",
                                     description="The embedded model's process (started by moot).")
    parser.add_argument("path")
    parser.add_argument("--check", action="store_true", help="only check extra buffers on this machine")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--n-threads", type=int, default=None)
    parser.add_argument("--n-gpu-layers", type=int, default=0)
    parser.add_argument("--extra-buffers", choices=("on", "off"), default="off")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = arguments(argv)
    if args.check:
        return check(args.path)
    channel = protocol_channel()
    loaded = load_llama(args.path, args.n_ctx, args.n_threads, args.n_gpu_layers,
                        extra_buffers=args.extra_buffers == "on", family=(os.getppid(),))
    server = Server(loaded, channel)
    channel.send({"ready": {"chat_template": has_chat_template(loaded.llm.metadata), "threads": loaded.lock.threads,
                            "extra_buffers": loaded.extra_buffers, "pid": os.getpid()}})
    threading.Thread(target=server.listen, args=(sys.stdin.buffer,), name="moot-model-requests", daemon=True).start()
    server.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
