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
from typing import Any, Optional, Sequence
from moot.cli.options import Parser, summary

from moot.data.spec import DatasetError, load_dataset_spec
from moot.scenario.load import scenario_errors
from moot.safety.yamlsource import SourceError, read_yaml
from moot.safety.neutral import terminal_safe

DATASET_KEYS = {"path", "columns"}


def is_dataset_spec(data: Any) -> bool:
    """A DATA.yaml rather than a scenario: no `protocol:`, and a dataset's `path:` or `columns:`
    (either one, so a spec with a typo in the other is still checked as a spec)."""
    return isinstance(data, dict) and "protocol" not in data and bool(DATASET_KEYS & data.keys())


def input_columns() -> list[str]:
    """The dataset column keys any registered protocol's inputs are filled from."""
    from moot.protocols.registry import REGISTRY

    return [f.source for p in REGISTRY.all(from_yaml=False) for f in p.inputs if f.source]


def is_experiment(data: Any) -> bool:
    return isinstance(data, dict) and "protocol" not in data and "experiment" in data


def experiment_problems(path: Path, datasets: Optional[Sequence[str]]) -> list[str]:
    """An experiment file's first problem (it is checked whole, as `moot run` checks it)."""
    from moot.experiment.schema import load_experiment

    try:
        load_experiment(path, datasets)
    except SourceError as exc:
        return [str(exc)]
    return []


def problems(path: Path, datasets: Optional[Sequence[str]] = None) -> list[str]:
    """Every problem of one file, one line each."""
    try:
        source = read_yaml(path)
    except SourceError as exc:
        return [str(exc)]
    if is_experiment(source.data):
        return experiment_problems(path, datasets)
    if not is_dataset_spec(source.data):
        return [str(error) for error in scenario_errors(path)]
    try:
        load_dataset_spec(path, input_columns())
    except DatasetError as exc:
        return [str(exc)]
    return []


def run(argv: Sequence[str]) -> int:
    p = Parser(prog="moot validate", description=summary(__doc__))
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="scenario, dataset spec or experiment (YAML)")
    p.add_argument("--dataset", action="append", metavar="D",
                   help="an experiment's datasets, in place of the file's (repeatable)")
    args = p.parse_args(argv)
    bad = 0
    for path in args.files:
        found = problems(path, args.dataset)
        print(terminal_safe("\n".join(found) if found else f"ok: {path}"))
        bad += bool(found)
    return 2 if bad else 0
