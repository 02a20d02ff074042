#!/usr/bin/env python3
"""Concurrency benchmark: COLA on N synthetic items against a loopback OpenAI-compatible server.

The server answers every chat completion after a fixed latency and serves at most `--cap`
requests at once (the rest queue). COLA runs through the real `openai:` backend (AutoGen's
OpenAIChatCompletionClient) with `--concurrency K` and no cache. Printed: wall time, the bound
calls x latency / cap, wall/bound, and the one-call-at-a-time baseline (--concurrency 1) with
baseline/wall speed-up. Target: wall <= 1.25 x bound.

    python benchmarks/bench_concurrency.py --items 64 --concurrency 16 --cap 16 --latency 0.1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import uvicorn
from fastapi import FastAPI, Request

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moot.models.calls import RetryPolicy  # noqa: E402
from moot.models.factory import BackendOptions  # noqa: E402
from moot.protocols import cola  # noqa: E402
from moot.protocols.batch import run_batch  # noqa: E402
from moot.models.cache import NoCache  # noqa: E402
from moot.protocols.cola_schema import ColaScenario  # noqa: E402
from moot.protocols.context import Engine  # noqa: E402


class LatencyServer:
    """POST /v1/chat/completions: sleeps `latency` s, at most `cap` requests served at once."""

    def __init__(self, latency: float, cap: int, port: int):
        self.latency, self.cap, self.port = latency, cap, port
        self.requests = self.in_flight = self.peak = 0
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self.complete)
        self._sem: asyncio.Semaphore | None = None
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port,
                                                    log_level="error", access_log=False))

    async def complete(self, request: Request) -> dict:
        body = await request.json()
        self._sem = self._sem or asyncio.Semaphore(self.cap)
        async with self._sem:
            self.requests += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            await asyncio.sleep(self.latency)
            self.in_flight -= 1
        structured = body.get("response_format") is not None
        content = (json.dumps({"stance": "against", "explanation": "synthetic"}) if structured
                   else "A synthetic analysis or argument of a few words.")
        return {"id": "bench", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", "bench"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}

    async def stats(self) -> dict:
        return {"requests": self.requests, "peak": self.peak}


def serve(port: int, latency: float, cap: int) -> None:
    server = LatencyServer(latency, cap, port)
    server.app.get("/stats")(server.stats)
    server.server.run()


class ServerThread:
    """The latency server on a thread of this process (the default: on a small machine the
    extra process costs more in context switches than it saves in GIL time)."""

    def __init__(self, latency: float, cap: int):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.server = LatencyServer(latency, cap, self.port)

    def __enter__(self) -> "ServerThread":
        self.thread = threading.Thread(target=self.server.server.run, daemon=True)
        self.thread.start()
        while not self.server.server.started:
            time.sleep(0.01)
        return self

    def stats(self) -> dict:
        return {"requests": self.server.requests, "peak": self.server.peak}

    def __exit__(self, *exc) -> None:
        self.server.server.should_exit = True
        self.thread.join(timeout=5)


class ServerProcess:
    """The latency server in its own process, so its work does not share the client's GIL."""

    def __init__(self, latency: float, cap: int):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.args = [sys.executable, __file__, "--serve", str(self.port), "--latency", str(latency),
                     "--cap", str(cap)]

    def __enter__(self) -> "ServerProcess":
        self.proc = subprocess.Popen(self.args)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                self.stats()
                return self
            except OSError:
                time.sleep(0.05)
        self.proc.kill()
        raise SystemExit("the latency server did not start")

    def stats(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=2) as r:
            return json.loads(r.read())

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def synthetic_items(n: int) -> tuple[ColaScenario, list]:
    s = ColaScenario(protocol="cola", models={"default": "openai:bench"})
    return s, [cola.item_input(s, f"s{i}", f"Synthetic post number {i} about topic {i % 7}.",
                               f"topic {i % 7}", gold="against") for i in range(n)]


async def timed_run(base_url: str, n: int, concurrency: int) -> tuple[float, int]:
    scenario, items = synthetic_items(n)
    engine = Engine(concurrency=concurrency, cache=NoCache(), retry=RetryPolicy(1, 0, 30),
                    options=BackendOptions(openai_base_url=base_url, openai_api_key="bench"))
    with tempfile.TemporaryDirectory() as out:
        started = time.monotonic()
        outcome = await run_batch(cola, scenario, Path("bench.yaml"), "bench", items, engine, Path(out),
                                  progress_stream=open("/dev/null", "w"))
        wall = time.monotonic() - started
    await engine.close()
    if outcome.failed:
        raise SystemExit(f"{len(outcome.failed)} items failed: {outcome.failed[0].cause}")
    return wall, engine.stats.backend_calls


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=64)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--cap", type=int, default=16, help="server: requests served at once")
    p.add_argument("--latency", type=float, default=0.1, help="server: seconds per request")
    p.add_argument("--baseline-items", type=int, default=8,
                   help="items run one call at a time for the baseline (scaled to the same call count)")
    p.add_argument("--server", choices=("thread", "process"), default="thread",
                   help="run the latency server on a thread (default) or in its own process")
    p.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.serve:
        serve(args.serve, args.latency, args.cap)
        return 0
    with (ServerThread if args.server == "thread" else ServerProcess)(args.latency, args.cap) as server:
        base = f"http://127.0.0.1:{server.port}/v1"
        asyncio.run(timed_run(base, 1, 1))  # warm-up: imports, connection pool
        wall, calls = asyncio.run(timed_run(base, args.items, args.concurrency))
        peak = server.stats()["peak"]
        base_wall, base_calls = asyncio.run(timed_run(base, args.baseline_items, 1))
    bound = calls * args.latency / args.cap
    baseline = base_wall * calls / base_calls  # one call at a time, scaled to the same call count
    print(f"items={args.items} calls={calls} concurrency={args.concurrency} cap={args.cap} "
          f"latency={args.latency * 1000:.0f}ms peak_in_flight={peak}")
    print(f"wall={wall:.2f}s bound={bound:.2f}s wall/bound={wall / bound:.2f}x (target <= 1.25x)")
    print(f"baseline(one call at a time)={baseline:.2f}s baseline/wall={baseline / wall:.1f}x "
          f"wall/baseline={wall / baseline:.3f}")
    return 0 if wall / bound <= 1.25 else 1


if __name__ == "__main__":
    sys.exit(main())
