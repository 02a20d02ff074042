#!/usr/bin/env python3
"""Orchestration overhead: a COLA batch through moot vs the same number of raw `openai` calls.

All run as whole processes (interpreter start and imports included) against the same
zero-latency loopback server (benchmarks/loopback.py), with the same number of calls in flight,
interleaved. Prints the wall and CPU times (median of --repeat runs) and the ratios against two
baselines: raw `openai` calls as the SDK makes them by default (httpx) and raw calls through the
SDK's aiohttp transport, which moot uses: what moot itself costs per call (the target, issue 18:
<= 1.25x its wall time).
--tracing adds two runs of moot: with the call path's tracing check taken out (the engine's `ask`
unwrapped: what tracing off is measured against) and with --trace, its spans sent to the same
loopback server as an OTLP collector (moot.tracing).

    python benchmarks/bench_overhead.py --items 300 --concurrency 32 [--tracing]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from loopback import CALLS_PER_ITEM, Server, moot_cola, timed, write_dataset

HERE = Path(__file__).resolve().parent
UNTRACED = ("import sys; from moot.models.engine import ModelEngine; ModelEngine.ask = ModelEngine.ask.__wrapped__; "
            "from moot.cli import main_exit; sys.argv = ['moot', *sys.argv[1:]]; main_exit()")


def variants(spec: Path, url: str, tmp: Path, n: int, concurrency: int) -> dict[str, list]:
    """moot's batch with the tracing check taken out, and with tracing on (spans to the same server)."""
    untraced, traced = (moot_cola(spec, url, tmp / f"{name}{n}", concurrency) for name in ("untraced", "traced"))
    return {"untraced": [sys.executable, "-c", UNTRACED, *untraced[3:]],  # [3:]: after `python -m moot`
            "traced": ["/usr/bin/env", "MOOT_TRACE=1", f"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT={url}/traces", *traced]}


def tracing_lines(median: dict, what: str) -> str:
    return (f"{what}: tracing off/untraced = {median['moot'] / median['untraced']:.3f}x "
            f"(moot {median['moot']:.2f}s, untraced {median['untraced']:.2f}s); "
            f"on (--trace, loopback collector)/off = {median['traced'] / median['moot']:.2f}x")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=300)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--tracing", action="store_true", help="also moot untraced and with --trace (see above)")
    args = p.parse_args()
    calls = args.items * CALLS_PER_ITEM
    runs: dict[str, list] = {"moot": [], "httpx": [], "aiohttp": []}
    if args.tracing:
        runs.update(untraced=[], traced=[])
    with tempfile.TemporaryDirectory() as tmp, Server(latency=0.0) as server:
        spec = write_dataset(Path(tmp) / "data", args.items)
        for n in range(args.repeat):
            runs["moot"].append(timed(moot_cola(spec, server.url, Path(tmp) / f"run{n}", args.concurrency)))
            if args.tracing:
                for name, argv in variants(spec, server.url, Path(tmp), n, args.concurrency).items():
                    runs[name].append(timed(argv))
            for transport in ("httpx", "aiohttp"):
                runs[transport].append(timed([sys.executable, str(HERE / "raw_openai.py"), server.url, str(calls),
                                              str(args.concurrency), transport]))
    print(f"items={args.items} calls={calls} concurrency={args.concurrency} repeat={args.repeat} "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for what, index in (("wall", 0), ("cpu", 1)):
        median = {name: statistics.median(r[index] for r in done) for name, done in runs.items()}
        print(f"{what}: moot batch {median['moot']:.2f}s ({median['moot'] / calls * 1000:.2f} ms/call); "
              + "; ".join(f"raw openai ({name}) {median[name]:.2f}s -> moot/raw = {median['moot'] / median[name]:.2f}x"
                          for name in ("httpx", "aiohttp"))
              + (" (target: <= 1.25x against the aiohttp transport)" if what == "wall" else ""))
        print("  runs " + " | ".join(f"{name}: " + " ".join(f"{r[index]:.2f}" for r in done) for name, done in runs.items()))
        if args.tracing:
            print(tracing_lines(median, what))
    return 0


if __name__ == "__main__":
    sys.exit(main())
