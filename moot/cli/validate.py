"""`validate SCENARIO...`: check scenario files without running anything.

Prints every problem as `file:line: key.path: what is wrong (allowed: ...)`, and `ok: FILE` for a
good file; exits 0 when all files are good, else 2. Good for editors, pre-commit hooks and CI.
"""

from __future__ import annotations

import argparse
from typing import Sequence

from moot.scenario import scenario_errors


def run(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="moot validate", description=__doc__.splitlines()[0])
    p.add_argument("scenarios", nargs="+", metavar="SCENARIO", help="scenario YAML file(s)")
    args = p.parse_args(argv)
    bad = 0
    for path in args.scenarios:
        problems = scenario_errors(path)
        for problem in problems:
            print(problem)
        if problems:
            bad += 1
        else:
            print(f"ok: {path}")
    return 2 if bad else 0
