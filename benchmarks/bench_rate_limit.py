#!/usr/bin/env python3
"""Does a run keep to a server's rate limit? Issue 31's figures for adaptive concurrency.

For each rate N, a loopback OpenAI-compatible server (tests/fault_server.py) lets N requests per
second through (a token bucket of one second) and answers the rest HTTP 429 with `Retry-After: 1`,
as a provider's rate limit does; a COLA run of ITEMS items at `--concurrency 32` (`moot run`, its
own process) goes against it. Printed per N: the exit code, results and failed units, requests
answered and refused (429), the wall time, and the throughput: answered requests per second from
the first request to the last, against N (target: no failed unit, >= 80 % of N).

`--moot DIR` runs the moot of another checkout (e.g. one from before adaptive concurrency, for the
figures before); `--upstream URL` forwards every request let through to a real OpenAI-compatible
server (a llama-server) instead of the scripted reply (then N must stay below what it serves;
`--max-tokens` bounds each reply so that a slow server keeps up: N below 1 needs `--burst 1`).

    python benchmarks/bench_rate_limit.py --rates 10,20,40
    python benchmarks/bench_rate_limit.py --rates 20 --moot /path/to/older/checkout
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fault_server import FaultServer  # noqa: E402

SCENARIO = ("protocol: cola\nmodels: {default: 'openai:limited'}\n"
            "max_unparsed: 1\n")  # the scripted replies are no stance: measured here is the pace
TOPICS = ("online classes", "taxes", "nuclear power")
LABELS = ("favor", "against", "neutral")


def write_inputs(folder: Path, items: int, max_tokens: int | None = None) -> tuple[Path, Path]:
    """The scenario (each reply bounded to `max_tokens`, if given) and a synthetic dataset of `items` rows."""
    rows = ["text,target,label"] + [f'"Post {i}: a view on {TOPICS[i % 3]}.",{TOPICS[i % 3]},{LABELS[i % 3]}'
                                    for i in range(items)]
    (folder / "data.csv").write_text("\n".join(rows) + "\n")
    (folder / "data.yaml").write_text("path: data.csv\nformat: csv\ncolumns: {text: text, target: target, label: label}\n")
    bound = f"generation: {{max_tokens: {max_tokens}}}\n" if max_tokens else ""
    (folder / "cola.yaml").write_text(SCENARIO + bound)
    return folder / "cola.yaml", folder / "data.yaml"


def one_rate(rate: float, items: int, concurrency: int, moot: Path, upstream: str | None,
             latency: float, burst: float | None, max_tokens: int | None = None) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        scenario, data = write_inputs(folder, items, max_tokens)
        env = {**os.environ, "PYTHONPATH": str(moot), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1",
               "OPENAI_API_KEY": "sk-bench"}
        with FaultServer("ok", delay=latency, rate=rate, burst=burst, retry_after="1", upstream=upstream) as server:
            started = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "moot", "run", str(scenario), "--dataset", str(data),
                                   "--out", str(folder / "run"), "--quiet", "--concurrency", str(concurrency),
                                   "--base-url", server.url], env=env, capture_output=True, text=True, cwd=folder)
            wall = time.monotonic() - started
            times = [r.at for r in server.requests]
            answered = len(server.requests)
        results = folder / "run" / "results.jsonl"
        rows = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
        meta = json.loads((folder / "run" / "run.json").read_text()) if (folder / "run" / "run.json").exists() else {}
        span = max(times) - min(times) if len(times) > 1 else float("nan")
        return {"rate": rate, "exit": done.returncode, "results": len(rows), "failed": items - len(rows),
                "answered": answered, "refused": server.refused, "wall_s": round(wall, 1),
                "throughput": answered / span if span else float("nan"), "pacing": meta.get("pacing"),
                "stderr": done.stderr.strip().splitlines()[-3:]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rates", default="10,20,40", help="requests per second the server allows, comma-separated")
    p.add_argument("--items", type=int, default=30)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--moot", type=Path, default=ROOT, help="the checkout whose moot runs (default: this one)")
    p.add_argument("--latency", type=float, default=0.0, help="seconds each scripted answer takes")
    p.add_argument("--burst", type=float, help="requests the server lets through at once (default: N)")
    p.add_argument("--upstream", help="a real OpenAI-compatible server answering the requests let through")
    p.add_argument("--max-tokens", type=int, help="the scenario's generation.max_tokens (a slow upstream)")
    args = p.parse_args()
    print(f"COLA, {args.items} items, --concurrency {args.concurrency}, answers taking {args.latency:g}s, "
          f"moot from {args.moot}" + (f", upstream {args.upstream}" if args.upstream else "")
          + (f", max_tokens {args.max_tokens}" if args.max_tokens else ""))
    print(f"{'N/s':>5} {'exit':>4} {'results':>7} {'failed':>6} {'answered':>8} {'429s':>5} {'wall s':>6} "
          f"{'req/s':>6} {'of N':>5}  pace (lowest/ceiling, cuts)")
    for rate in (float(r) for r in args.rates.split(",")):
        got = one_rate(rate, args.items, args.concurrency, args.moot, args.upstream, args.latency, args.burst,
                       args.max_tokens)
        pacing = got["pacing"] or {}
        pace = ", ".join(f"{p['lowest']}/{p['ceiling']} ({p['cuts']} cuts)" for p in pacing.values()) or "-"
        share = float(got["throughput"]) / rate  # type: ignore[arg-type]
        print(f"{rate:5g} {got['exit']:>4} {got['results']:>7} {got['failed']:>6} {got['answered']:>8} "
              f"{got['refused']:>5} {got['wall_s']:>6} {float(got['throughput']):6.1f} {share:5.0%}  {pace}")  # type: ignore[arg-type]
        if got["exit"] != 0:
            print("      " + " | ".join(got["stderr"]))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
