#!/usr/bin/env python3
"""How much can parallel slots buy on this machine? llama.cpp's own ceiling for issue 28's goal.

Issue 28 asks dataset protocols to run at >= 2x the items per minute of the embedded model's one
unit at a time, by letting concurrent units share the model's decodes. Whatever moot does, it
cannot beat what llama.cpp itself gets from batching. This measures that, with no moot in the
path: llama-server serving the embedded model (`moot llama-server --build` once) with N slots,
N requests at once straight to its `/completion` endpoint:

- generation: each request a short distinct prompt and 200 generated tokens (`ignore_eos`), so the
  figure is decoding alone; aggregate tokens per second over the wall time of the N requests;
- prompt evaluation: each request a distinct ~500-token prompt and 1 generated token, no prompt
  cache; aggregate prompt tokens per second.

Each N is measured --repeat times, the sizes' order reversed every other round, and the median is
printed with its ratio to one stream. On a 2-core machine generation gained 1.57x at 4 streams and
2.0x at 8; prompt evaluation, already a batch, gains little. The protocols' items spend time in
both, so their gain from slots is below the generation figure.

    python benchmarks/bench_slots.py
    python benchmarks/bench_slots.py --streams 1,4,8 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from moot.models.backends.local.llama_server import embedded_server

GENERATED = 200
PROMPT_WORDS = 400  # about 500 of Gemma's tokens
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy


def post(url: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with OPENER.open(request, timeout=600) as answer:
        return dict(json.load(answer))


def rate(url: str, streams: int, decode: bool) -> float:
    """Aggregate tokens per second of `streams` requests sent at once: generated (decode) or evaluated."""
    def one(k: int) -> int:
        if decode:
            body = {"prompt": f"Story {k}: once upon a time in village {k},", "n_predict": GENERATED,
                    "ignore_eos": True, "temperature": 0.8, "seed": k, "cache_prompt": False}
        else:
            words = " ".join(f"w{k}x{i}" for i in range(PROMPT_WORDS // 2))
            body = {"prompt": f"Record {k}. {words}", "n_predict": 1, "cache_prompt": False}
        timings = post(url, body)["timings"]
        assert isinstance(timings, dict)
        return int(timings["predicted_n"] if decode else timings["prompt_n"])

    started = time.monotonic()
    with ThreadPoolExecutor(streams) as pool:
        tokens = sum(pool.map(one, range(streams)))
    return tokens / (time.monotonic() - started)


def measure(streams: int) -> tuple[float, float]:
    with embedded_server(parallel=streams, ctx=2048) as server:
        url = server.url.removesuffix("/v1") + "/completion"
        rate(url, 1, True)  # warm-up
        return rate(url, streams, True), rate(url, streams, False)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--streams", default="1,2,4,8,16", help="slot counts to measure (1 is the baseline)")
    p.add_argument("--repeat", type=int, default=2, help="rounds, the order reversed every other one")
    args = p.parse_args()
    sizes = sorted({1, *map(int, args.streams.split(","))})
    found: dict[int, list[tuple[float, float]]] = {n: [] for n in sizes}
    for round_ in range(args.repeat):
        for n in (sizes if round_ % 2 == 0 else sizes[::-1]):
            found[n].append(measure(n))
    base_gen = statistics.median(g for g, _ in found[1])
    base_eval = statistics.median(e for _, e in found[1])
    print("| streams | generated tok/s | × 1 stream | prompt tok/s | × 1 stream |\n|---|---|---|---|---|")
    for n in sizes:
        gen, ev = statistics.median(g for g, _ in found[n]), statistics.median(e for _, e in found[n])
        print(f"| {n} | {gen:.1f} | {gen / base_gen:.2f} | {ev:.0f} | {ev / base_eval:.2f} |")
    best = max(sizes, key=lambda n: statistics.median(g for g, _ in found[n]))
    print(f"ceiling: llama-server generation at {best} streams "
          f"{statistics.median(g for g, _ in found[best]) / base_gen:.2f}x one stream")


if __name__ == "__main__":
    main()
