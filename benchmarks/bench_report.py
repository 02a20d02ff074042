"""Benchmark: `moot report` over a large experiment, and `moot run EXPERIMENT --plan` over it.

Writes a scripted experiment's saved cells (6 arms x 5 repeats x 3,000 items = 90,000 units: run.json
and results.jsonl per cell, the manifest, a 3,000-item dataset with 6 targets; predictions drawn
with a fixed seed, each arm right with its own probability), then times, in child processes:

- `moot report` over it (wall time and peak RSS), and over a third and two thirds of the items
  (the same arms and repeats) to show how the time grows with units;
- `moot run EXPERIMENT.yaml --plan` (wall time; building a client of any model but moot's
  in-process scripted one, which the token estimate's dry run renders prompts with, fails the
  run, so a model call cannot go unnoticed).

Each figure is the median of --runs runs; the 1-minute load average is printed beside (this
machine has 2 cores and is shared). Goals (issue 16): report <= 15 s and <= 600 MB, linear in units;
plan <= 3 s with zero model calls.

    python benchmarks/bench_report.py [--items 3000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARMS = {"cola": 0.72, "direct": 0.55, "cot": 0.58, "sc5": 0.6, "debate": 0.63, "first-round": 0.6}
SCENARIOS = {"cola": "cola", "direct": "cola_direct", "cot": "cola_cot", "sc5": "cola_direct", "debate": "debate",
             "first-round": "debate"}
REPEATS = 5
LABELS = ["favor", "against", "neutral"]
TARGETS = ["t1", "t2", "t3", "t4", "t5", "t6"]


def write_dataset(folder: Path, items: int) -> Path:
    rng = random.Random(1)
    with open(folder / "data.jsonl", "w", encoding="utf-8") as f:
        for i in range(items):
            f.write(json.dumps({"id": f"i{i}", "text": f"post {i}", "target": TARGETS[i % 6],
                                "label": LABELS[rng.randrange(3)]}) + "\n")
    spec = folder / "bench.yaml"
    spec.write_text("path: data.jsonl\nformat: jsonl\ncolumns: {id: id, text: text, target: target, label: label}\n"
                    "labels: {favor: favor, against: against, neutral: neutral}\nmetric: macro_f1\n", encoding="utf-8")
    return spec


def write_experiment(folder: Path, items: int) -> Path:
    """The experiment file and its saved cells (module docstring); returns the experiment folder."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = write_dataset(folder, items)
    arms = "\n".join(f"  - {{name: {a}, scenario: {s}}}" for a, s in SCENARIOS.items())
    (folder / "exp.yaml").write_text(
        f"experiment: bench\narms:\n{arms}\ndatasets: [{spec}]\nmodels: [scripted]\nrepeats: {REPEATS}\n"
        "compare: {reference: cola, metrics: [macro_f1, accuracy]}\n", encoding="utf-8")
    gold = [json.loads(line)["label"] for line in (folder / "data.jsonl").read_text().splitlines()]
    out = folder / "out"
    cells = []
    for a, right in ARMS.items():
        for seed in range(REPEATS):
            rng = random.Random(f"{a}-{seed}")
            cell = out / a / "bench" / "scripted" / f"seed-{seed}"
            cell.mkdir(parents=True)
            (cell / "run.json").write_text(json.dumps({
                "protocol": "cola", "labels": LABELS, "headline_metric": "macro_f1", "planned_units": items,
                "dataset_path": str(spec)}), encoding="utf-8")
            with open(cell / "results.jsonl", "w", encoding="utf-8") as f:
                for i, g in enumerate(gold):
                    p = g if rng.random() < right else rng.choice([x for x in LABELS if x != g] + ["unparsed"])
                    f.write(json.dumps({"id": f"i{i}", "status": "completed", "prediction": p, "gold": g,
                                        "transcript": f"i{i}.jsonl"}) + "\n")
            cells.append({"arm": a, "dataset": "bench", "model": "scripted", "seed": seed, "repeat": seed,
                          "folder": str(cell.relative_to(out)), "status": "completed"})
    (out / "experiment.json").write_text(json.dumps({
        "manifest_version": 1, "experiment": "bench", "arms": {a: {} for a in ARMS}, "datasets": {},
        "compare": {"reference": "cola", "metrics": ["macro_f1", "accuracy"], "test": None},
        "published": None, "cells": cells}), encoding="utf-8")
    return out


def child(code: str) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of `python -c code` in a child process."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"child failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, usage.ru_utime + usage.ru_stime - cpu, max(usage.ru_maxrss, before) / 1024


def report_code(out: Path, dest: Path) -> str:
    return f"import sys; from moot.cli import main; sys.exit(main(['report', {str(out)!r}, '--out', {str(dest)!r}]))"


PLAN = """
import sys
import moot.models.engine as engine
built = engine.build_client
def refused(spec, *a, **k):  # the token estimate's dry run is on the in-process scripted model; nothing else
    if not str(spec).startswith('scripted'):
        raise SystemExit(f'a model client ({{spec}}) was built during --plan')
    return built(spec, *a, **k)
engine.build_client = refused
from moot.cli import main
sys.exit(main(['run', {exp!r}, '--plan', '--out', {out!r}]))
"""


def median_of(runs: int, code: str) -> tuple[float, float, float]:
    """Median wall and CPU seconds, and the largest peak RSS, of `runs` children."""
    found = [child(code) for _ in range(runs)]
    return (statistics.median(w for w, _, _ in found), statistics.median(c for _, c, _ in found),
            max(m for _, _, m in found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for share in (1, 2, 3):
            items = args.items * share // 3
            folder = Path(tmp) / f"n{items}"
            out = write_experiment(folder, items)
            wall, cpu, peak = median_of(args.runs, report_code(out, folder / "report"))
            units = len(ARMS) * REPEATS * items
            rows.append((units, wall, cpu))
            print(f"moot report: {units:>6} units  wall {wall:6.2f} s  cpu {cpu:6.2f} s (medians of {args.runs})  "
                  f"peak RSS {peak:5.0f} MB  load {os.getloadavg()[0]:.2f}", flush=True)
        (u1, w1, c1), (u3, w3, c3) = rows[0], rows[-1]
        print(f"growth: {u3 / u1:.1f}x units -> {w3 / w1:.2f}x wall, {c3 / c1:.2f}x cpu (linear would be at most "
              f"{u3 / u1:.1f}x; a process's fixed start-up counts in each); each further 30,000 units cost "
              f"{(c3 - c1) / (u3 - u1) * 30000:.2f} s cpu")
        exp = Path(tmp) / f"n{args.items}" / "exp.yaml"
        wall, cpu, _ = median_of(args.runs, PLAN.format(exp=str(exp), out=str(Path(tmp) / "plan-out")))
        print(f"moot run --plan: {len(ARMS) * REPEATS} cells, {len(ARMS) * REPEATS * args.items} units  wall {wall:.2f} s"
              f"  cpu {cpu:.2f} s (medians of {args.runs}), model calls: 0 (no client but the scripted dry run's was built)  "
              f"load {os.getloadavg()[0]:.2f}")
        print(f"goals: report <= 15 s and <= 600 MB at 90,000 units; --plan <= 3 s")


if __name__ == "__main__":
    main()
