"""`validate FILE...`: check scenario files, dataset specs and experiment files without running anything.

Prints every problem as one line `file:line: key.path: what is wrong`, with the nearest valid
name (`did you mean ...?`) or the allowed ones, and `ok: FILE` for a good file; exits 0 when all
files are good, else 2. A dataset spec (a DATA.yaml: `path:` and `columns:`, no `protocol:`) is
checked as one, its data file included (its `columns:` may name the inputs of any registered
protocol). An experiment file (`experiment:` at its top) is checked whole, as `moot run` checks it
(its first problem); `--dataset D` checks it with D in place of its datasets (a paper's experiment
before its data is here). Good for editors, pre-commit hooks and CI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from moot.cli.options import Parser, summary
from moot.experiment.api import validate
from moot.safety.neutral import terminal_safe


def run(argv: Sequence[str]) -> int:
    p = Parser(prog="moot validate", description=summary(__doc__))
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="scenario, dataset spec or experiment (YAML)")
    p.add_argument("--dataset", action="append", metavar="D",
                   help="an experiment's datasets, in place of the file's (repeatable)")
    args = p.parse_args(argv)
    bad = 0
    for path in args.files:
        found = validate(path, args.dataset)
        print(terminal_safe("\n".join(found) if found else f"ok: {path}"))
        bad += bool(found)
    return 2 if bad else 0
