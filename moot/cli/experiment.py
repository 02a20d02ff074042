"""`moot run EXPERIMENT.yaml [--plan] [--shard I/N] [--out DIR]`: run (or plan) an experiment's grid.

An experiment file is a YAML file whose top level has `experiment:` (moot.experiment.schema). The
whole file is checked before anything runs; every cell is a run folder inside the experiment
folder (moot.experiment.grid); `--plan` prints what the grid would spend and calls no model
(moot.experiment.plan); `moot report FOLDER` gives its findings (moot.experiment.report).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Optional

from moot.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from moot.cli.options import run_options
from moot.errors import UsageError
from moot.views.neutral import terminal_safe

if TYPE_CHECKING:
    from autogen_core.models import ChatCompletionClient


def bundled(given: str) -> Path:
    """An experiment file: the path as given, else a bundled experiment of that name (experiments/)."""
    from importlib import resources

    path = Path(given)
    if path.exists() or path.parent != Path(".") or path.suffix not in ("", ".yaml"):
        return path
    shipped = Path(str(resources.files("moot.experiments"))) / f"{path.stem}.yaml"
    return shipped if shipped.is_file() else path


def is_experiment_file(given: str) -> bool:
    """Whether `given` names a YAML file with `experiment:` at its top level (its first 64 KB read),
    or a bundled experiment."""
    path = bundled(given)
    if path.suffix not in (".yaml", ".yml") or not path.is_file():
        return False
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(65536)
    except (OSError, UnicodeDecodeError):
        return False
    return any(line.startswith("experiment:") for line in head.splitlines())


def run(args: argparse.Namespace, clients: Optional[Mapping[str, "ChatCompletionClient"]] = None) -> int:
    from moot.experiment.grid import default_out, parse_shard, run_experiment
    from moot.experiment.schema import load_experiment

    for flag, value in (("--dataset", args.dataset), ("--input", args.input), ("--vary", args.vary)):
        if value:
            raise UsageError(f"{flag}: an experiment file names its own datasets and arms")
    experiment = load_experiment(bundled(args.scenario))
    given = {key: value for key, value in (("limit", args.limit), ("repeats", args.repeat)) if value}
    if given:  # a quick check: fewer items or repeats than the file asks for
        experiment = dataclasses.replace(experiment, spec=experiment.spec.model_copy(update=given))
    shard = parse_shard(args.shard) if args.shard else None
    out = Path(args.out) if args.out else default_out(experiment)
    if args.plan:
        from moot.experiment.plan import lines, plan_cells

        prices = tuple(args.price) if args.price else None
        print(terminal_safe("\n".join(lines(plan_cells(experiment, out, shard), out, shard, prices))))
        return EXIT_OK
    quiet = args.quiet
    status = run_experiment(experiment, out, run_options(args, clients), shard, args.allow_changed,
                            on_cell=None if quiet else lambda cell, line: print(terminal_safe(line)))
    done = sum(1 for s in status.values() if s == "completed")
    print(terminal_safe(f"experiment {experiment.name}: {done}/{len(status)} cells completed ({out}); "
                        f"moot report {out} for the tables"))
    if any(s == "interrupted" for s in status.values()):
        print(terminal_safe(f"interrupted: run the same command again to continue ({out})"), file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK if done == len(status) else EXIT_FAILED
