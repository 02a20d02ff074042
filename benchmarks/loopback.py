"""A fake OpenAI-compatible server on loopback for the benchmarks, and a synthetic COLA dataset.

`python benchmarks/loopback.py PORT LATENCY` serves POST /v1/chat/completions (any path but GET and
POST /v1/traces, where spans are taken and dropped like a collector's): each request waits
LATENCY seconds (asyncio.sleep, so any number wait at once) and answers a short reply (a JSON
stance when a response_format is asked, an option letter when options are offered). It runs in its own process so its CPU does not share
the client's interpreter. Used by bench_overhead.py and bench_latency.py.
"""

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPLY = "A synthetic analysis or argument of a few words."
STANCE = json.dumps({"stance": "against", "explanation": "synthetic"})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answer(body: bytes) -> bytes:
    request = json.loads(body or b"{}")
    asked = str((request.get("messages") or [{}])[-1].get("content", ""))
    content = STANCE if request.get("response_format") else "B" if "Choose from:" in asked else REPLY
    return json.dumps({
        "id": "bench", "object": "chat.completion", "created": 0, "model": request.get("model", "bench"),
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}).encode()


async def serve(port: int, latency: float) -> None:
    """A minimal HTTP/1.1 keep-alive server (a few microseconds per request, so the client is measured)."""
    seen = {"requests": 0, "in_flight": 0, "peak": 0, "first": None, "last": None}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
                body = await reader.readexactly(int(headers.get("content-length", 0)))
                if lines[0].startswith("GET"):
                    payload = json.dumps({"object": "list", "data": [], **seen}).encode()
                elif lines[0].startswith("POST /v1/traces"):  # an OTLP collector's (bench_overhead.py --tracing)
                    payload = b""
                else:
                    seen["requests"] += 1
                    seen["in_flight"] += 1
                    seen["peak"] = max(seen["peak"], seen["in_flight"])
                    seen["first"] = seen["first"] or time.time()
                    if latency:
                        await asyncio.sleep(latency)
                    seen["in_flight"] -= 1
                    seen["last"] = time.time()
                    payload = answer(body)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                             + str(len(payload)).encode() + b"\r\n\r\n" + payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


class Server:
    """The loopback server in a child process, for a `with` block."""

    def __init__(self, latency: float = 0.0):
        self.port, self.latency = free_port(), latency
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> "Server":
        self.proc = subprocess.Popen([sys.executable, __file__, str(self.port), str(self.latency)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                self.stats()
                return self
            except OSError:
                time.sleep(0.05)
        self.proc.kill()
        raise SystemExit("the loopback server did not start")

    def stats(self) -> dict:
        """requests served, the peak served at once, wall times of the first request and last reply."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{self.url}/models", timeout=2) as r:
            return json.loads(r.read())

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def write_dataset(folder: Path, items: int) -> Path:
    """A synthetic stance dataset (CSV + DATA.yaml) of `items` rows; returns the spec's path."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = ["text,target,label"] + [f"Synthetic post number {i} about topic {i % 7}.,topic {i % 7},against"
                                    for i in range(items)]
    (folder / "data.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    spec = folder / "data.yaml"
    spec.write_text("path: data.csv\ncolumns: {text: text, target: target, label: label}\nmetric: macro_f1\n",
                    encoding="utf-8")
    return spec


CALLS_PER_ITEM = 7  # COLA: three analysts, three debaters, the judger


def moot_cola(spec: Path, url: str, out: Path, concurrency: int) -> list:
    """`moot run cola` on `spec` against the loopback server at `url`, the reply cache off."""
    return [sys.executable, "-m", "moot", "run", "cola", "--dataset", str(spec), "--model", "openai:bench",
            "--base-url", url, "--out", str(out), "--concurrency", str(concurrency), "--quiet", "--no-cache"]


def scripted_cola_batch(tmp: Path, items: int) -> tuple:
    """A COLA batch of `items` synthetic rows on the scripted model in tmp/runITEMS:
    (the run folder, wall seconds, peak RSS MB of the process)."""
    spec = write_dataset(tmp / f"data{items}", items)
    out = tmp / f"run{items}"
    wall, _, rss = timed([sys.executable, "-m", "moot", "run", "cola", "--dataset", str(spec), "--model", "scripted",
                          "--out", str(out), "--concurrency", "32", "--quiet"])
    return out, wall, rss


def timed(argv: list) -> tuple:
    """(wall seconds, CPU seconds, peak RSS MB) of a whole child process, which must succeed.
    CPU time (user + system) is steadier than wall time on a busy machine."""
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.execv(argv[0], argv)
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv[:5])} ... failed ({os.waitstatus_to_exitcode(status)})")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1]), float(sys.argv[2])))
