#!/usr/bin/env python3
"""Scheduling under latency: a COLA batch against a server that takes 100 ms per request.

With K requests in flight and L seconds per request, N calls cannot finish faster than the bound
N x L / K. moot runs the batch as a whole process (`moot run ... --concurrency K`) against a
loopback server (benchmarks/loopback.py) that answers after L seconds; printed: wall, the bound,
wall/bound (target, issue 18: <= 1.1x), the peak number of requests the server saw at once, and
where the wall went: start-up (interpreter, imports, reading the dataset) before the first
request, the run itself (first request to last reply: the scheduling the bound is about), and
the end (results, metrics, closing); for scale, how long a process takes that only imports the
openai SDK and builds its client (a floor no start-up through the SDK can go below), and the same
number of calls made raw through the SDK's aiohttp transport (benchmarks/raw_openai.py: K in
flight, no dependencies between calls, nothing else) against a fresh server of the same latency,
split the same way: the transport's own floor for this bound.

    python benchmarks/bench_latency.py --items 600 --concurrency 32 --latency 0.1
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from loopback import CALLS_PER_ITEM, Server, moot_cola, timed, write_dataset

SDK_START = "import openai; openai.AsyncOpenAI(api_key='x', http_client=openai.DefaultAioHttpClient())"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=600)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--latency", type=float, default=0.1)
    args = p.parse_args()
    calls = args.items * CALLS_PER_ITEM
    with tempfile.TemporaryDirectory() as tmp, Server(latency=args.latency) as server:
        spec = write_dataset(Path(tmp) / "data", args.items)
        started = time.time()
        wall, cpu, _ = timed(moot_cola(spec, server.url, Path(tmp) / "run", args.concurrency))
        seen = server.stats()
    bound = calls * args.latency / args.concurrency
    serving = seen["last"] - seen["first"]
    print(f"items={args.items} calls={calls} (server saw {seen['requests']}) concurrency={args.concurrency} "
          f"latency={args.latency * 1000:.0f}ms peak_in_flight={seen['peak']} (load average {os.getloadavg()[0]:.1f})")
    print(f"wall={wall:.2f}s (cpu {cpu:.2f}s) bound={bound:.2f}s wall/bound={wall / bound:.2f}x (target <= 1.1x)")
    print(f"  of which: start-up before the first request {seen['first'] - started:.2f}s, first request to last "
          f"reply {serving:.2f}s ({serving / bound:.2f}x the bound), after the last reply "
          f"{started + wall - seen['last']:.2f}s")
    floor, _, _ = timed([sys.executable, "-c", SDK_START])
    print(f"  for scale: a process that only imports the openai SDK and builds its aiohttp client takes {floor:.2f}s")
    with Server(latency=args.latency) as server:
        started = time.time()
        raw, raw_cpu, _ = timed([sys.executable, str(Path(__file__).with_name("raw_openai.py")), server.url, str(calls),
                                 str(args.concurrency), "aiohttp"])
        seen = server.stats()
    serving = seen["last"] - seen["first"]
    print(f"  the same {calls} calls raw through the SDK's aiohttp transport: wall={raw:.2f}s (cpu {raw_cpu:.2f}s) "
          f"{raw / bound:.2f}x the bound; start-up {seen['first'] - started:.2f}s, first request to last reply "
          f"{serving:.2f}s ({serving / bound:.2f}x); moot's wall / raw's: {wall / raw:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
