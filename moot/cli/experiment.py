"""`moot run EXPERIMENT.yaml [--plan] [--shard I/N] [--out DIR]`: run (or plan) an experiment's grid.

An experiment file is a YAML file whose top level has `experiment:` (moot.experiment.schema). The
whole file is checked before anything runs; every cell is a run folder inside the experiment
folder (default transcripts/NAME); `--plan` prints what the grid would spend and calls no model;
`moot report FOLDER` gives its findings (all through moot.experiment.api).

`moot run SCENARIO --vary KEY=V1,V2 --repeat N` stands for an experiment file (moot.experiment.api.grid_of).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from moot.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from moot.cli.options import run_options
from moot.errors import UsageError
from moot.api.bundled import find_experiment
from moot.safety.neutral import terminal_safe

if TYPE_CHECKING:
    from autogen_core.models import ChatCompletionClient

    from moot.experiment.api import Experiment

Clients = Optional[Mapping[str, "ChatCompletionClient"]]


def is_experiment_file(given: str) -> bool:
    """Whether `given` names a YAML file with `experiment:` at its top level (its first 64 KB read),
    or a bundled experiment."""
    path = find_experiment(given)
    if path.suffix not in (".yaml", ".yml") or not path.is_file():
        return False
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(65536)
    except (OSError, UnicodeDecodeError):
        return False
    return any(line.startswith("experiment:") for line in head.splitlines())


def run(args: argparse.Namespace, clients: Clients = None) -> int:
    from moot.experiment.api import load_experiment

    for flag, value in (("--input", args.input), ("--vary", args.vary)):
        if value:
            raise UsageError(f"{flag}: an experiment file names its own arms")
    experiment = load_experiment(args.scenario, limit=args.limit, repeats=args.repeat,
                                 datasets=[str(args.dataset)] if args.dataset else None)
    return run_grid(experiment, Path(args.out) if args.out else None, args, clients)


def run_shorthand(args: argparse.Namespace, scenario: Path, clients: Clients = None) -> int:
    """`moot run SCENARIO --vary ... --repeat N`: the experiment it stands for (moot.experiment.api.grid_of)."""
    from moot.experiment.api import grid_of

    if args.input:
        raise UsageError("--input: a grid runs a dataset's items (--dataset) or the scenario itself")
    if args.model and any(item.partition("=")[0].strip() == "model" for item in args.vary):
        raise UsageError("--model: --vary model=... names the models already; give one of them")
    made, out = grid_of(scenario, dataset=args.dataset, vary=args.vary, repeats=args.repeat, limit=args.limit,
                        out=args.out or None)
    return run_grid(made, out, args, clients)


def with_models(experiment: "Experiment", given: Sequence[str]) -> "Experiment":
    """`--model SPEC` (repeatable): the models axis, every role of every arm on each, over the file's."""
    if not given:
        return experiment
    for spec in given:
        key, sep, _ = spec.partition("=")
        if sep and ":" not in key:
            raise UsageError(f"--model {spec}: an experiment puts every role on a model (--model SPEC); "
                             "a role's own model goes in an arm's `set: {models.ROLE: SPEC}`")
    return dataclasses.replace(experiment, spec=experiment.spec.model_copy(update={"models": tuple(given)}))


def run_grid(experiment: "Experiment", out: Optional[Path], args: argparse.Namespace, clients: Clients) -> int:
    """Plan, or run (or continue) the experiment's cells into `out` (None: its default folder)."""
    from moot.experiment.api import parse_shard, plan_lines, run_experiment
    from moot.cli.gridstatus import GridStatus

    experiment = with_models(experiment, args.model)
    shard = parse_shard(args.shard) if args.shard else None
    if args.plan:
        print(terminal_safe("\n".join(plan_lines(experiment, out=out, shard=shard, options=run_options(args, clients)))))
        if experiment.spec.score:
            model = "the cell's model" if experiment.spec.models else None
            roles = ", ".join(f"{role}={model or spec}" for role, spec in experiment.spec.score.items())
            print(terminal_safe(f"then each finished cell is re-scored ({roles}; score:), with calls the run decides (?)"))
        return EXIT_OK
    status = None if args.quiet else GridStatus()
    try:
        result = run_experiment(experiment, out=out, options=run_options(args, clients), shard=shard,
                                allow_changed=args.allow_changed, on_cell=status.report if status else None,
                                watch=status)
    finally:
        if status is not None:
            status.close()
    out = result.folder
    print(terminal_safe(f"experiment {experiment.name}: {result.completed}/{len(result.status)} cells completed "
                        f"({out}); moot report {out} for the tables"))
    if result.interrupted:
        print(terminal_safe(f"interrupted: run the same command again to continue ({out})"), file=sys.stderr)
        return EXIT_INTERRUPTED
    if result.stopped:
        print(terminal_safe(result.stopped), file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK if result.completed == len(result.status) else EXIT_FAILED
