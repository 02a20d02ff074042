#!/usr/bin/env python3
"""Orchestration overhead: a COLA batch through moot vs the same number of raw `openai` calls.

Both run as whole processes (interpreter start and imports included) against the same
zero-latency loopback server (benchmarks/loopback.py), with the same number of calls in flight.
Prints both wall times (median of --repeat runs) and their ratio. Target (issue 8): <= 1.5x.

    python benchmarks/bench_overhead.py --items 300 --concurrency 32
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
def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=300)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    calls = args.items * CALLS_PER_ITEM
    moot_runs, raw_runs = [], []
    with tempfile.TemporaryDirectory() as tmp, Server(latency=0.0) as server:
        spec = write_dataset(Path(tmp) / "data", args.items)
        for n in range(args.repeat):
            out = Path(tmp) / f"run{n}"
            moot_runs.append(timed(moot_cola(spec, server.url, out, args.concurrency)))
            raw_runs.append(timed([sys.executable, str(HERE / "raw_openai.py"), server.url, str(calls),
                                   str(args.concurrency)]))
    print(f"items={args.items} calls={calls} concurrency={args.concurrency} repeat={args.repeat} "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for what, index in (("wall", 0), ("cpu", 1)):
        moot, raw = (statistics.median(r[index] for r in runs) for runs in (moot_runs, raw_runs))
        print(f"{what}: moot batch {moot:.2f}s ({moot / calls * 1000:.2f} ms/call), raw openai {raw:.2f}s "
              f"({raw / calls * 1000:.2f} ms/call) -> moot/raw = {moot / raw:.2f}x"
              + (" (target <= 1.5x)" if what == "wall" else ""))
        print("  runs moot: " + " ".join(f"{r[index]:.2f}" for r in moot_runs)
              + " | raw: " + " ".join(f"{r[index]:.2f}" for r in raw_runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
