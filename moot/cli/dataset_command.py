"""`moot NAME DATA.yaml [options]`: a command a protocol declares (moot.contract.commands).

The protocol builds its scenario from the command's own options and the labels the dataset
yields; from there it runs exactly like `moot run SCENARIO --dataset DATA.yaml`: a run folder
(default transcripts/<what the protocol names>), resumable, cached, concurrent, with the same
model, engine, backend and output options.
"""

from __future__ import annotations

import argparse
from typing import Sequence

from moot.api.bundled import find_dataset
from moot.api.commands import DatasetCommand, prepare_command, protocol_commands
from moot.cli.options import Parser, add_backends, add_engine, add_model, add_out, positive_int, run_options
from moot.cli.run import execute


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


def run(name: str, argv: Sequence[str]) -> int:
    """Run the protocol command `name` with its arguments."""
    args = parser(protocol_commands()[name]).parse_args(argv)
    prepared = prepare_command(name, args, args.dataset, limit=args.limit, models=args.model, out=args.out or None,
                               options=run_options(args))
    return execute(prepared, args.quiet)
