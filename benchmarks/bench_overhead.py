#!/usr/bin/env python3
"""Orchestration overhead: a COLA batch through moot vs the same number of raw `openai` calls.

Both run as whole processes (interpreter start and imports included) against the same
zero-latency loopback server (benchmarks/loopback.py), with the same number of calls in flight.
Prints both wall times (median of --repeat runs) and their ratio. Target (issue 8): <= 1.5x.

    python benchmarks/bench_overhead.py --items 300 --concurrency 32
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from loopback import Server, timed, write_dataset

HERE = Path(__file__).resolve().parent
CALLS_PER_ITEM = 7  # COLA: three analysts, three debaters, the judger


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=300)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    calls = args.items * CALLS_PER_ITEM
    moot_walls, raw_walls = [], []
    with tempfile.TemporaryDirectory() as tmp, Server(latency=0.0) as server:
        spec = write_dataset(Path(tmp) / "data", args.items)
        for n in range(args.repeat):
            out = Path(tmp) / f"run{n}"
            moot_walls.append(timed([sys.executable, "-m", "moot", "run", "cola", "--dataset", str(spec),
                                     "--model", "openai:bench", "--base-url", server.url, "--out", str(out),
                                     "--concurrency", str(args.concurrency), "--quiet", "--no-cache"]))
            raw_walls.append(timed([sys.executable, str(HERE / "raw_openai.py"), server.url, str(calls),
                                    str(args.concurrency)]))
    moot, raw = statistics.median(moot_walls), statistics.median(raw_walls)
    print(f"items={args.items} calls={calls} concurrency={args.concurrency} repeat={args.repeat}")
    print(f"moot batch wall={moot:.2f}s ({moot / calls * 1000:.2f} ms/call)  runs: "
          + " ".join(f"{w:.2f}" for w in moot_walls))
    print(f"raw openai wall={raw:.2f}s ({raw / calls * 1000:.2f} ms/call)  runs: " + " ".join(f"{w:.2f}" for w in raw_walls))
    print(f"moot/raw = {moot / raw:.2f}x (target <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
