"""`moot judge-eval DATA.yaml --task stance|polarity`: the judge of a conference scenario as a dataset run."""

from __future__ import annotations

import argparse
import hashlib
import json
from typing import Sequence

from moot.contract.commands import DatasetCommand, Prepared
from moot.kit import find_scenario, load_scenario
from moot.protocols.judge_eval.schema import NAME, TASKS, JudgeEvalScenario, from_conference, labels_for


def identity(s: JudgeEvalScenario) -> dict[str, object]:
    """Run-directory identity beyond the scenario/dataset hashes: task, labels and prompt texts."""
    prompts = json.dumps(s.templates(), sort_keys=True).encode("utf-8")
    return {"protocol": NAME, "task": s.task, "labels": list(s.labels),
            "prompts_sha256": hashlib.sha256(prompts).hexdigest(),
            "generation": s.generation.model_dump(mode="json")}


def command_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", choices=TASKS, required=True,
                   help="stance (favor/against[/neutral]) or polarity (positive/negative/neutral)")
    p.add_argument("--scenario", default="drug_policy",
                   help="conference scenario whose judge is evaluated (file or bundled name; default drug_policy)")
    p.add_argument("--temperature", type=float, default=0.0,
                   help="sampling temperature of the judge here (default 0.0: a deterministic classifier)")


def prepare(args: argparse.Namespace, dataset_labels: Sequence[str]) -> Prepared:
    """The judge of the `--scenario` conference as a classifier for `--task` on the dataset's labels."""
    path = find_scenario(args.scenario)
    labels = labels_for(args.task, dataset_labels)
    scenario = from_conference(load_scenario(path), args.task, labels, None, args.temperature)
    return Prepared(scenario, path, f"judge-eval-{args.task}-{args.dataset.stem}", identity(scenario))


COMMAND = DatasetCommand(
    name="judge-eval",
    help="the conference judge alone as a zero-shot stance/polarity classifier on a dataset",
    description=("The conference judge alone as a classifier (Heller et al. 2025 §4.1 / §5.1, Tables 1-4): "
                 "the judge of a conference scenario (its name, persona, model and generation settings) "
                 "answers zero-shot stance (favor / against [/ neutral]) or stance-polarity (positive / "
                 "negative / neutral) questions on a dataset, as a resumable, cached, concurrent dataset "
                 "run; `moot report` puts it in the shape of the paper's tables."),
    options=command_options,
    prepare=prepare,
)
