#!/usr/bin/env python3
"""Issue 31's `--batch` goal, measured: a COLA experiment with 2 arms (debate on and off) on N demo
stance items, through OpenAI's Batch API (`--provider anthropic`: Anthropic's Message Batches) and
through direct calls, on llama-server.

The batch API is tests/batch_server.py's loopback Files and Batches (and Message Batches) server,
which runs each line on the same llama-server (one slot and no prompt cache: a reply depends neither
on what ran beside it nor on what ran before it, so batched and direct replies can be compared). Both runs use the same scenario (COLA with `max_tokens` cut to
--max-tokens, so the figures come in minutes on a shared machine) and fresh folders. Printed:
batches made and waves sent against the protocol's turn depth (3: analysts, debaters, judger),
lines run upstream, wall time of each, and whether every call's reply and every item's label of
each arm equal the direct run's.

demo-stance has 48 items: for N > 48 its items are cycled, each copy's text tagged `[copy K]`
(so no two items share a prompt) into a temporary dataset; the figures say so.

    python benchmarks/bench_batch.py                 # N=200 (needs `moot llama-server --build` once)
    python benchmarks/bench_batch.py --items 12 --max-tokens 8
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from batch_server import BatchServer  # noqa: E402
from moot.cli import main  # noqa: E402
from moot.models.backends.local.extra_buffers import choose  # noqa: E402
from moot.models.backends.local.llama_server import LlamaServer, binary  # noqa: E402
from moot.models.backends.local.client import default_model_path  # noqa: E402

# Without it a reply depends on the order requests came in: a prompt evaluated after a cached prefix
# is computed in other batch shapes than from scratch, and at 4-5 of 44 calls of a 4-item run the
# sampled tokens differed between batched and direct runs of the same prompts. Each request from
# scratch costs time (the whole prompt evaluated) and makes every reply a function of its request.
NO_PROMPT_CACHE = ("--no-cache-prompt",)
TURN_DEPTH = 3  # COLA with debate: analysts, debaters, judger (without: analysts, judger)


def dataset(folder: Path, items: int) -> Path:
    """demo-stance's first `items` items, cycled (each copy's text tagged) past its 48."""
    rows = [json.loads(line) for line in (ROOT / "datasets" / "demo" / "demo_stance.jsonl").read_text().splitlines()]
    made = []
    for n in range(items):
        row, copy = dict(rows[n % len(rows)]), n // len(rows)
        if copy:
            row["id"], row["text"] = f"{row['id']}-copy{copy}", f"{row['text']} [copy {copy}]"
        made.append(row)
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in made), encoding="utf-8")
    spec = (ROOT / "datasets" / "demo-stance.yaml").read_text(encoding="utf-8")
    path = folder / "stance.yaml"
    path.write_text(spec.replace("path: demo/demo_stance.jsonl", "path: items.jsonl"), encoding="utf-8")
    return path


def scenario(folder: Path, max_tokens: int) -> Path:
    text = (ROOT / "scenarios" / "cola.yaml").read_text(encoding="utf-8").replace(
        "max_tokens: 256", f"max_tokens: {max_tokens}")
    path = folder / "cola.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def calls(out: Path) -> dict[str, list[tuple[str, str]]]:
    """Every transcript's calls (cache key, reply), by the transcript's path under `out`."""
    found = {}
    for path in sorted(out.rglob("*.jsonl")):
        if path.parent.name == "batches" or path.name == "results.jsonl":
            continue
        events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        found[str(path.relative_to(out))] = sorted((e["key"], e["reply"]) for e in events if e["type"] == "call")
    return found


def labels(out: Path) -> dict[str, str]:
    return {f"{path.parent.relative_to(out)}/{row['id']}": row["prediction"] for path in sorted(out.rglob("results.jsonl"))
            for row in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def model_args(provider: str, url: str) -> list[str]:
    """The command line naming the model at `url` (an Anthropic server: ANTHROPIC_BASE_URL, set here)."""
    if provider == "openai":
        return ["--model", "openai:gemma", "--base-url", url]
    os.environ["ANTHROPIC_BASE_URL"] = url
    return ["--model", "anthropic:gemma"]


def run(source: Path, data: Path, at: list[str], out: Path, batch: bool) -> float:
    started = time.monotonic()
    main(["run", str(source), "--vary", "debate=true,false", "--dataset", str(data), *at, "--out", str(out),
          "--quiet", *(["--batch"] if batch else [])])
    return time.monotonic() - started


def main_() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=200)
    p.add_argument("--max-tokens", type=int, default=8)
    p.add_argument("--provider", choices=("openai", "anthropic"), default="openai")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data, source = dataset(folder, args.items), scenario(folder, args.max_tokens)
        model = default_model_path()
        with LlamaServer(model, repack=choose("auto", model).use, log=folder / "server.log", server=binary(False),
                         parallel=1, ctx=4096, chat_template="gemma", extra=NO_PROMPT_CACHE) as llama, BatchServer(llama.url) as server:
            batched = run(source, data, model_args(args.provider, server.url), folder / "batched", True)
            journal = [json.loads(line) for line in (folder / "batched" / "batches" / "journal.jsonl").read_text().splitlines()]
            direct = run(source, data, model_args(args.provider, llama.url), folder / "direct", False)
            same_calls = calls(folder / "batched") == calls(folder / "direct")
            same_labels = labels(folder / "batched") == labels(folder / "direct")
            copies = f" (demo-stance cycled, texts tagged)" if args.items > 48 else ""
            print(f"COLA, 2 arms (debate on / off), {args.items} items{copies}, max_tokens {args.max_tokens}, "
                  f"{args.provider}:gemma on llama-server (1 slot) behind the loopback batch API")
            waves = max(r.get("wave", 0) for r in journal)
            print(f"batches {len(server.batches) + len(server.message_batches)}, waves {waves}, turn depth "
                  f"{TURN_DEPTH}; lines run {server.executed}; labelled items {len(labels(folder / 'batched'))}")
            print(f"wall: batched {batched:.0f} s, direct {direct:.0f} s")
            print(f"every call's reply equal to direct: {same_calls}; every item's label equal: {same_labels}")


if __name__ == "__main__":
    main_()
