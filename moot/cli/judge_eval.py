"""`moot judge-eval DATA.yaml --task stance|polarity`: the conference judge alone as a classifier.

Heller et al. (2025) §4.1 / §5.1, Tables 1-4: the judge of a conference scenario (its name,
persona, model and generation settings) answers zero-shot stance (favor / against [/ neutral]) or
stance-polarity (positive / negative / neutral) questions on a dataset. It runs like any other
dataset run (a run folder, resumable, cached, concurrent) and prints accuracy, macro P/R/F1 and
class-wise F1; `moot report` puts it in the shape of the paper's tables.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from moot.scenario.bundled import find_dataset, find_scenario
from moot.cli.options import Parser, add_backends, add_engine, add_model, add_out, positive_int
from moot.cli.run import run_plan
from moot.data.load import iter_items, load_dataset_spec
from moot.protocols import judge_eval
from moot.protocols.registry import REGISTRY
from moot.engine.plan import dataset_plan
from moot.engine.setup import UsageError
from moot.scenario.load import load_scenario


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot judge-eval", description=__doc__.splitlines()[0])
    p.add_argument("dataset", type=find_dataset, metavar="DATA.yaml",
                   help="dataset spec (see datasets/), or a bundled demo set (demo-stance)")
    p.add_argument("--task", choices=judge_eval.TASKS, required=True,
                   help="stance (favor/against[/neutral]) or polarity (positive/negative/neutral)")
    p.add_argument("--scenario", default="drug_policy",
                   help="conference scenario whose judge is evaluated (file or bundled name; default drug_policy)")
    p.add_argument("--temperature", type=float, default=0.0,
                   help="sampling temperature of the judge here (default 0.0: a deterministic classifier)")
    p.add_argument("--limit", type=positive_int, help="the first N items of the dataset")
    add_model(p, "the judge's model (SPEC or judge=SPEC; default: the scenario judge's model)")
    add_out(p, "run folder (default transcripts/judge-eval-TASK-DATASET)")
    add_engine(p)
    add_backends(p)
    p.add_argument("--resume", action="store_true", help="continue the run in the folder (what rerunning does anyway)")
    p.add_argument("--allow-model-change", action="store_true", help="continue with another model (recorded)")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    return p


def dataset_labels(path: Path) -> list[str]:
    """Labels the dataset yields: the values of its label mapping, else those found in it."""
    spec = load_dataset_spec(path)
    if spec.labels is not None:
        return sorted({v.strip() for v in spec.labels.values()})
    return sorted({item.label for item in iter_items(spec) if item.label})


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    path = find_scenario(args.scenario)
    try:
        labels = judge_eval.labels_for(args.task, dataset_labels(args.dataset))
        scenario = judge_eval.from_conference(load_scenario(path), args.task, labels, None, args.temperature)
    except ValueError as exc:
        raise UsageError(f"{args.dataset}: {exc}") from None
    protocol = REGISTRY.get(judge_eval.NAME)
    plan = dataset_plan(protocol, scenario, args.dataset, args.limit)
    out = Path(args.out) if args.out else Path("transcripts") / f"judge-eval-{args.task}-{args.dataset.stem}"
    return run_plan(protocol, scenario, path, plan, out, args, identity_extra=judge_eval.identity(scenario))
