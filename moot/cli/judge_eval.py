"""`judge-eval DATA.yaml --task stance|polarity --model SPEC`: the judge alone as a classifier.

Heller et al. (2025) §4.1 / §5.1 Tables 1-4: the judge's model answers zero-shot stance
(favor / against [/ neutral]) or stance-polarity (positive / negative / neutral) questions on a
dataset. It runs as a per-item batch (moot.protocols.judge_eval on moot.protocols.batch):
results.jsonl, transcripts and a reply cache in --out (default runs/judge-eval-TASK-DATASET),
resumable with zero repeated model calls. It prints accuracy, macro P/R/F1, class-wise F1 and
the confusion matrix, then `run: DIR items=N backend_calls=N cache_hits=N unparsed=N`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from moot.bundled import bundled_dir
from moot.cli_args import add_backend_args, add_batch_args
from moot.datasets import iter_items, load_dataset_spec
from moot.models.spec import parse_spec
from moot.protocols import cli as batch_cli
from moot.protocols import judge_eval
from moot.scenario import load_scenario

DEFAULT_SCENARIO = bundled_dir() / "drug_policy.yaml"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="run_conference.py judge-eval",
                                description="Evaluate the decision-conference judge as a zero-shot "
                                            "stance or stance-polarity classifier on a dataset.")
    p.add_argument("dataset", type=Path, metavar="DATA.yaml", help="dataset spec (see datasets/)")
    p.add_argument("--task", choices=judge_eval.TASKS, required=True,
                   help="stance (favor/against[/neutral]) or polarity (positive/negative/neutral)")
    p.add_argument("--model", help="model spec (default: the scenario judge's model), e.g. local, "
                                   "openai:MODEL, ollama:MODEL, scripted")
    p.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO,
                   help="conference scenario whose judge (name, persona, model, generation) is "
                        "evaluated (default scenarios/drug_policy.yaml)")
    p.add_argument("--temperature", type=float, default=0.0,
                   help="sampling temperature of the judge here (default 0.0: a deterministic classifier)")
    add_batch_args(p, out_help="run directory (default runs/judge-eval-TASK-DATASET)",
                   cache_help="reply cache file (default DIR/cache.sqlite)")
    add_backend_args(p)
    return p


def dataset_labels(path: Path) -> list[str]:
    """Labels the dataset yields: the values of its label mapping, else those found in it."""
    spec = load_dataset_spec(path)
    if spec.labels is not None:
        return sorted({v.strip() for v in spec.labels.values()})
    return sorted({item.label for item in iter_items(spec) if item.label})


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if args.model:
        parse_spec(args.model)  # a bad spec is a usage error before anything runs
    conference = load_scenario(args.scenario)
    labels = judge_eval.labels_for(args.task, dataset_labels(args.dataset))
    scenario = judge_eval.from_conference(conference, args.task, labels, args.model, args.temperature)
    options, retry = batch_cli.call_settings(args, scenario)
    args.out = args.out or Path("runs") / f"judge-eval-{args.task}-{args.dataset.stem}"
    return batch_cli.run_dataset(args, scenario, judge_eval, options, retry)
