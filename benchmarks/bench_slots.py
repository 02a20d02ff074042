#!/usr/bin/env python3
"""How much can concurrent units buy on this machine? llama.cpp's own ceiling for issue 28's goal,
for both designs the issue names.

Issue 28 asks dataset protocols to run at >= 2x the items per minute of the embedded model's one
unit at a time, by letting concurrent units share the model's decodes: through llama-server's
parallel slots, or through multi-sequence batches in process. Whatever moot does, it cannot beat
what llama.cpp itself gets from batching. This measures that for both, with no moot in the path,
N streams at a time on the embedded model's GGUF with 2048 tokens of context per stream (CTX) and
the threads the server is given (moot.models.backends.local.cores.usable_cores):

- server: llama-server (`moot llama-server --build` once) with N slots, N requests at once
  straight to its `/completion` endpoint;
- in-process: the model loaded as moot loads it (moot.models.backends.local.load.load_llama, the
  extra-buffer choice as the server's repacking; its context has 32 sequences over one unified
  KV cache, kv.SEQUENCES), sequence k holding stream k, decoded with llama-cpp-python's low-level
  batches (kv.Sequences.decode_with): the N prompts in one batch, then one batch per step holding
  one token of each sequence. The next token is the argmax of the sequence's logits (greedy; the
  server samples at temperature 0.8): picking costs a pass over the vocabulary either way, and
  what is measured is the decode, not which tokens come out. Each design keeps its own defaults
  otherwise: llama-server gives each slot a KV cache of its own and chooses flash attention
  (`auto`); llama-cpp-python's context has neither.

Measured per design and N:
- generation: each stream a short distinct prompt and 200 generated tokens (the server with
  `ignore_eos`; in process nothing stops), so the figure is decoding alone; aggregate tokens per
  second over the wall time of the N streams, their prompts included;
- prompt evaluation: each stream a distinct ~500-token prompt and 1 generated token, no prompt
  cache (in process: the N prompts in batches of the context's n_batch); aggregate prompt tokens
  per second.

Each N is measured --repeat times (each measurement and the 1-minute load average go to stderr),
the sizes' order reversed every other round, each design in turn at each size, and the median is
printed with its ratio to the same design at one stream. The last line names the design with the
higher generation figure and its ratio to one stream in process (today's embedded model: one unit
at a time). On a 2-core machine llama-server's generation gained 1.57x at 4 streams and 2.0x at
8; prompt evaluation, already a batch, gains little. The protocols' items spend time in both,
so their gain is below the generation figure. On a loaded machine (load average 3-8, other
llama.cpp processes running) one stream fell to 3-5 tok/s in both designs and the ratios to it
lose meaning (30x at 8 streams): compare the designs at the same N within one run.

    python benchmarks/bench_slots.py
    python benchmarks/bench_slots.py --streams 1,4,8 --repeat 3 --designs in-process
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from moot.models.backends.local.cores import usable_cores
from moot.models.backends.local.kv import Row, Sequences
from moot.models.backends.local.llama_server import embedded_model, embedded_server
from moot.models.backends.local.load import load_llama

GENERATED = 200
PROMPT_WORDS = 400  # about 500 of Gemma's tokens
CTX = 2048  # context per stream
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
Rates = tuple[float, float]  # generated tok/s, prompt tok/s


def story(k: int) -> str:
    return f"Story {k}: once upon a time in village {k},"


def record(k: int) -> str:
    words = " ".join(f"w{k}x{i}" for i in range(PROMPT_WORDS // 2))
    return f"Record {k}. {words}"


def post(url: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with OPENER.open(request, timeout=600) as answer:
        return dict(json.load(answer))


def server_rate(url: str, streams: int, decode: bool) -> float:
    """Aggregate tokens per second of `streams` requests sent at once: generated (decode) or evaluated."""
    def one(k: int) -> int:
        if decode:
            body = {"prompt": story(k), "n_predict": GENERATED, "ignore_eos": True, "temperature": 0.8, "seed": k,
                    "cache_prompt": False}
        else:
            body = {"prompt": record(k), "n_predict": 1, "cache_prompt": False}
        timings = post(url, body)["timings"]
        assert isinstance(timings, dict)
        return int(timings["predicted_n"] if decode else timings["prompt_n"])

    started = time.monotonic()
    with ThreadPoolExecutor(streams) as pool:
        tokens = sum(pool.map(one, range(streams)))
    return tokens / (time.monotonic() - started)


def server(streams: int) -> Rates:
    with embedded_server(parallel=streams, ctx=CTX) as running:
        url = running.url.removesuffix("/v1") + "/completion"
        server_rate(url, 1, True)  # warm-up
        return server_rate(url, streams, True), server_rate(url, streams, False)


def greedy(llm: Any, index: int) -> int:
    """The most likely next token after the batch's row `index`."""
    import llama_cpp

    row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, index), shape=(llm.n_vocab(),))
    return int(row.argmax())


def prompt_rows(llm: Any, texts: list[str]) -> list[Row]:
    """Text k as sequence k from position 0, the logits of its last token read."""
    rows = []
    for k, text in enumerate(texts):
        tokens = llm.tokenize(text.encode())
        rows += [Row(t, pos, (k,), pos == len(tokens) - 1) for pos, t in enumerate(tokens)]
    return rows


def inprocess_rate(seqs: Sequences, streams: int, decode: bool) -> float:
    """Aggregate tokens per second of `streams` sequences decoded together: generated (decode) or evaluated."""
    seqs.llm._ctx.kv_cache_clear()
    started = time.monotonic()
    rows = prompt_rows(seqs.llm, [(story if decode else record)(k) for k in range(streams)])
    nexts = seqs.decode_with(rows, greedy)
    if not decode:
        return len(rows) / (time.monotonic() - started)
    ends = [row.pos + 1 for row in rows if row.logits]
    for step in range(GENERATED - 1):
        nexts = seqs.decode_with([Row(t, ends[k] + step, (k,), True) for k, t in enumerate(nexts)], greedy)
    return streams * GENERATED / (time.monotonic() - started)


def inprocess(streams: int) -> Rates:
    model = embedded_model()
    loaded = load_llama(model.path, CTX * streams, usable_cores(), extra_buffers=model.extra_buffers)
    try:
        seqs = Sequences(loaded.llm)
        if streams > seqs.count:
            raise SystemExit(f"{streams} streams: the context has {seqs.count} sequences (kv.SEQUENCES)")
        inprocess_rate(seqs, 1, True)  # warm-up
        return inprocess_rate(seqs, streams, True), inprocess_rate(seqs, streams, False)
    finally:
        load_llama.cache_clear()  # one context at a time, freed before the next design loads
        loaded.llm.close()


DESIGNS: dict[str, Callable[[int], Rates]] = {"server": server, "in-process": inprocess}


def median(found: list[Rates], which: int) -> float:
    return statistics.median(r[which] for r in found)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--streams", default="1,2,4,8,16", help="stream counts to measure (1 is the baseline)")
    p.add_argument("--repeat", type=int, default=2, help="rounds, the order reversed every other one")
    p.add_argument("--designs", default=",".join(DESIGNS), help=f"among {', '.join(DESIGNS)}")
    args = p.parse_args()
    sizes = sorted({1, *map(int, args.streams.split(","))})
    names = [name for name in DESIGNS if name in args.designs.split(",")]
    found: dict[str, dict[int, list[Rates]]] = {name: {n: [] for n in sizes} for name in names}
    for round_ in range(args.repeat):
        for n in (sizes if round_ % 2 == 0 else sizes[::-1]):
            for name in (names if round_ % 2 == 0 else names[::-1]):
                found[name][n].append(DESIGNS[name](n))
                gen, ev = found[name][n][-1]
                print(f"round {round_ + 1} {name} {n} streams: {gen:.1f} gen tok/s, {ev:.0f} prompt tok/s "
                      f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    columns = [(name, which) for which in (0, 1) for name in names]
    heads = " | ".join(f"{name} {('gen', 'prompt')[which]} tok/s | ×" for name, which in columns)
    print(f"| streams | {heads} |\n|---|" + "---|---|" * len(columns))
    for n in sizes:
        cells = " | ".join(f"{median(found[name][n], which):.{1 - which}f} | "
                           f"{median(found[name][n], which) / median(found[name][1], which):.2f}"
                           for name, which in columns)
        print(f"| {n} | {cells} |")
    best, n = max(((name, n) for name in names for n in sizes), key=lambda d: median(found[d[0]][d[1]], 0))
    today = median(found["in-process" if "in-process" in names else best][1], 0)
    print(f"ceiling: {best} generation at {n} streams {median(found[best][n], 0):.1f} tok/s, "
          f"{median(found[best][n], 0) / today:.2f}x one stream in process")


if __name__ == "__main__":
    main()
