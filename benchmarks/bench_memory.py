#!/usr/bin/env python3
"""Memory of a long batch: peak RSS of a 10,000-item scripted COLA batch vs a 1,000-item one.

Each batch runs as its own process (`python -m moot run ... --model scripted`); its peak resident
set size is read from the operating system (getrusage of the finished child). Target (issue 8):
the 10,000-item batch's peak RSS <= 1.2x the 1,000-item batch's.

    python benchmarks/bench_memory.py --small 1000 --large 10000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from loopback import scripted_cola_batch


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", type=int, default=1000)
    p.add_argument("--large", type=int, default=10000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        _, small_wall, small = scripted_cola_batch(Path(tmp), args.small)
        _, large_wall, large = scripted_cola_batch(Path(tmp), args.large)
    print(f"{args.small} items: peak RSS {small:.0f} MB ({small_wall:.0f}s)")
    print(f"{args.large} items: peak RSS {large:.0f} MB ({large_wall:.0f}s)")
    print(f"large/small = {large / small:.2f}x (target <= 1.2x); growth {(large - small) * 1024 / (args.large - args.small):.1f} KB/item")
    return 0


if __name__ == "__main__":
    sys.exit(main())
