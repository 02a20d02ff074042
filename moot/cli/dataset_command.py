"""`moot NAME DATA.yaml [options]`: a command a protocol declares (moot.contract.commands).

The protocol builds its scenario from the command's own options and the labels the dataset
yields; from there it runs exactly like `moot run SCENARIO --dataset DATA.yaml`: a run folder
(default transcripts/<what the protocol names>), resumable, cached, concurrent, with the same
model, engine, backend and output options.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from moot.api.running import prepare
from moot.cli.options import Parser, add_backends, add_engine, add_model, add_out, positive_int, run_options
from moot.cli.run import execute
from moot.contract.commands import DatasetCommand
from moot.data.load import iter_items, load_dataset_spec
from moot.engine.plan import input_columns
from moot.errors import MootError, UsageError
from moot.protocols.registry import REGISTRY
from moot.scenario.bundled import find_dataset


def parser(command: DatasetCommand) -> argparse.ArgumentParser:
    p = Parser(prog=f"moot {command.name}", description=command.description)
    p.add_argument("dataset", type=find_dataset, metavar="DATA.yaml",
                   help="dataset spec (see datasets/), or a bundled demo set (demo-stance)")
    command.options(p)
    p.add_argument("--limit", type=positive_int, help="the first N items of the dataset")
    add_model(p)
    add_out(p, "run folder (default: under transcripts/, named after the command's options and the dataset)")
    add_engine(p)
    add_backends(p)
    p.add_argument("--resume", action="store_true", help="continue the run in the folder (what rerunning does anyway)")
    p.add_argument("--allow-model-change", action="store_true", help="continue with another model (recorded)")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    return p


def dataset_labels(path: Path, columns: Sequence[str]) -> list[str]:
    """Labels the dataset yields: the values of its label mapping, else those found in it."""
    spec = load_dataset_spec(path, columns)
    if spec.labels is not None:
        return sorted({v.strip() for v in spec.labels.values()})
    return sorted({item.label for item in iter_items(spec) if item.label})


def run(name: str, argv: Sequence[str]) -> int:
    """Run the protocol command `name` with its arguments."""
    command = REGISTRY.commands()[name]
    protocol = next(p for p in REGISTRY.all(from_yaml=False) if command in p.commands)
    args = parser(command).parse_args(argv)
    try:
        prepared = command.prepare(args, dataset_labels(args.dataset, input_columns(protocol)))
    except MootError:
        raise
    except ValueError as exc:
        raise UsageError(f"{args.dataset}: {exc}") from None
    out = Path(args.out) if args.out else Path("transcripts") / prepared.out
    run = prepare(prepared.scenario, source=prepared.scenario_path, dataset=args.dataset, limit=args.limit,
                  models=args.model, out=out, options=run_options(args), identity=prepared.identity)
    return execute(run, args.quiet)
