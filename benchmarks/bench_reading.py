#!/usr/bin/env python3
"""Reading saved runs through the Python API: peak memory of iterating a large run's units and
events, and of its metrics, vs a small run's (they must not grow with the run), and the time each
reading takes per unit.

Two scripted COLA batches are made with `moot run` (a small and a large one); each reading runs as
its own process and its peak resident set size is read from the operating system. Data frames
hold a row per unit, event or call, so they grow with the run by design; `units_df` is timed.

    python benchmarks/bench_reading.py --small 1000 --large 10000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from loopback import scripted_cola_batch, timed

READINGS = {
    "events": "sum(1 for _ in run.events())",  # every event of every unit, one transcript at a time
    "metrics": "run.metrics()",
    "units_df": "moot.units_df(run)",
}


def read(run: Path, what: str) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of a process that opens `run` and does one reading."""
    code = f"import moot; run = moot.open_run({str(run)!r}); {READINGS[what]}"
    wall, _, rss = timed([sys.executable, "-c", code])
    return wall, rss


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", type=int, default=1000)
    p.add_argument("--large", type=int, default=10000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = {n: scripted_cola_batch(Path(tmp), n)[0] for n in (args.small, args.large)}
        for what in READINGS:
            (small_wall, small_rss), (large_wall, large_rss) = (read(runs[n], what) for n in (args.small, args.large))
            print(f"{what:9s} {args.small} units: {small_rss:.0f} MB {small_wall:.1f}s | {args.large} units: "
                  f"{large_rss:.0f} MB {large_wall:.1f}s | peak RSS x{large_rss / small_rss:.2f}, "
                  f"{(large_wall - small_wall) * 1000 / (args.large - args.small):.2f} ms per further unit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
