"""`moot judge-eval DATA.yaml --task stance|polarity [--model SPEC]`: the judge alone as a classifier.

Heller et al. (2025) §4.1 / §5.1 Tables 1-4: the conference judge's model answers zero-shot stance
(favor / against [/ neutral]) or stance-polarity (positive / negative / neutral) questions on a
dataset. It runs as a run folder of items like any protocol (moot.protocols.judge_eval): results,
one transcript per item and a reply cache in --out (default transcripts/judge-eval-TASK-DATASET),
resumable with zero repeated model calls. It prints accuracy, macro P/R/F1, class-wise F1 and the
confusion matrix; `moot report` puts runs side by side in the shape of the paper's tables.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Optional, Sequence

from moot.bundled import find_scenario
from moot.cli.options import add_backends, add_engine, add_out, backend_options, positive_int
from moot.cli.run import execute
from moot.datasets import dataset_fingerprint, iter_items, load_dataset_spec
from moot.models.preflight import preflight
from moot.models.spec import parse_spec
from moot.protocols import judge_eval
from moot.runs.folder import RunFolder
from moot.runs.meta import check_identity, describe_run
from moot.runs.plan import dataset_plan
from moot.runs.runner import RunSetup
from moot.runs.setup import UsageError, resolve_models
from moot.scenario import load_scenario, scenario_content_hash, scenario_hash

DEFAULT_SCENARIO = "drug_policy"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="moot judge-eval",
                                description="Evaluate the decision-conference judge as a zero-shot "
                                            "stance or stance-polarity classifier on a dataset.")
    p.add_argument("dataset", type=Path, metavar="DATA.yaml", help="dataset spec (see datasets/)")
    p.add_argument("--task", choices=judge_eval.TASKS, required=True,
                   help="stance (favor/against[/neutral]) or polarity (positive/negative/neutral)")
    p.add_argument("--model", action="append", default=[], metavar="[judge=]SPEC",
                   help="the judge's model (default: the scenario judge's), e.g. local, openai:MODEL, scripted")
    p.add_argument("--scenario", default=DEFAULT_SCENARIO,
                   help="conference scenario whose judge (name, persona, model, generation) is evaluated "
                        "(a file or a bundled name; default drug_policy)")
    p.add_argument("--temperature", type=float, default=0.0,
                   help="sampling temperature of the judge here (default 0.0: a deterministic classifier)")
    p.add_argument("--limit", type=positive_int, help="the first N items of the dataset")
    add_out(p, "run folder (default transcripts/judge-eval-TASK-DATASET)")
    add_engine(p)
    add_backends(p)
    p.add_argument("--allow-model-change", action="store_true",
                   help="continue a run with another model than it started with (recorded in the run)")
    p.add_argument("--quiet", action="store_true", help="no progress line; only the summary")
    return p


def dataset_labels(path: Path) -> list[str]:
    """Labels the dataset yields: the values of its label mapping, else those found in it."""
    spec = load_dataset_spec(path)
    if spec.labels is not None:
        return sorted({v.strip() for v in spec.labels.values()})
    return sorted({item.label for item in iter_items(spec) if item.label})


def judge_spec(given: Sequence[str]) -> Optional[str]:
    """`--model SPEC` or `--model judge=SPEC` (the only role here)."""
    if len(given) > 1:
        raise UsageError("--model: judge-eval has one role (the judge); give one --model")
    if not given:
        return None
    key, sep, spec = given[0].partition("=")
    if sep and key.strip() not in ("judge", "default"):
        raise UsageError(f"--model {given[0]}: judge-eval has one role, judge")
    spec = spec if sep else given[0]
    try:
        parse_spec(spec)
    except ValueError as exc:
        raise UsageError(f"--model {given[0]}: {exc}") from None
    return spec.strip()


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    spec = judge_spec(args.model)
    path = find_scenario(args.scenario)
    conference = load_scenario(path)
    try:
        labels = judge_eval.labels_for(args.task, dataset_labels(args.dataset))
        scenario = judge_eval.from_conference(conference, args.task, labels, spec, args.temperature)
    except ValueError as exc:
        raise UsageError(f"{args.dataset}: {exc}") from None
    protocol = judge_eval.PROTOCOL
    plan = dataset_plan(protocol, scenario, args.dataset, args.limit)
    models = resolve_models(scenario)
    options = backend_options(args, scenario.backends)
    preflight(models.values(), options)
    out = Path(args.out) if args.out else Path("transcripts") / f"judge-eval-{args.task}-{args.dataset.stem}"
    identity = {**judge_eval.identity(scenario), "scenario_sha256": scenario_hash(path),
                "scenario_content_sha256": scenario_content_hash(scenario),
                "dataset_sha256": dataset_fingerprint(plan.spec), "models": models}
    setup = RunSetup(protocol, str(path), identity["scenario_sha256"], options.public(), args.allow_model_change)
    metric = scenario.headline_metric()
    args.model = []  # the judge's model is in the scenario now
    with RunFolder(out) as folder:
        check_identity(folder, identity, describe_run(protocol.name, scenario, str(path), metric, plan, args.limit),
                       args.allow_model_change)
        return execute(setup, plan, folder, args, options, metric, scenario)
