"""`moot run EXPERIMENT.yaml [--plan] [--shard I/N] [--out DIR]`: run (or plan) an experiment's grid.

An experiment file is a YAML file whose top level has `experiment:` (moot.experiment.schema). The
whole file is checked before anything runs; every cell is a run folder inside the experiment
folder (moot.experiment.grid); `--plan` prints what the grid would spend and calls no model
(moot.experiment.plan); `moot report FOLDER` gives its findings (moot.experiment.report).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Optional

from moot.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from moot.cli.options import run_options
from moot.errors import UsageError
from moot.scenario.bundled import find_experiment
from moot.views.neutral import terminal_safe

if TYPE_CHECKING:
    from autogen_core.models import ChatCompletionClient


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


def run(args: argparse.Namespace, clients: Optional[Mapping[str, "ChatCompletionClient"]] = None) -> int:
    from moot.api.experiments import load_experiment, plan_experiment, run_experiment
    from moot.experiment.grid import default_out, parse_shard

    for flag, value in (("--dataset", args.dataset), ("--input", args.input), ("--vary", args.vary)):
        if value:
            raise UsageError(f"{flag}: an experiment file names its own datasets and arms")
    experiment = load_experiment(args.scenario, limit=args.limit, repeats=args.repeat)
    shard = parse_shard(args.shard) if args.shard else None
    out = Path(args.out) if args.out else default_out(experiment)
    if args.plan:
        from moot.experiment.plan import lines

        prices = tuple(args.price) if args.price else None
        print(terminal_safe("\n".join(lines(plan_experiment(experiment, out=out, shard=shard), out, shard, prices))))
        return EXIT_OK
    result = run_experiment(experiment, out=out, options=run_options(args, clients), shard=shard,
                            allow_changed=args.allow_changed,
                            on_cell=None if args.quiet else lambda cell, line: print(terminal_safe(line)))
    print(terminal_safe(f"experiment {experiment.name}: {result.completed}/{len(result.status)} cells completed "
                        f"({out}); moot report {out} for the tables"))
    if result.interrupted:
        print(terminal_safe(f"interrupted: run the same command again to continue ({out})"), file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK if result.completed == len(result.status) else EXIT_FAILED
