"""The protocols' own commands (moot.contract.commands: `moot NAME DATA.yaml [options]`) from
Python: which there are, and the run one stands for, prepared as `prepare` prepares any run.

A command's options are its protocol's: `command.options(parser)` adds them to an argparse
parser, and `prepare_command` builds the protocol's scenario from the parsed arguments (from
Python: an `argparse.Namespace` of them) and the labels the dataset yields.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from moot.api.options import Models, PathLike, RunOptions
from moot.contract.commands import DatasetCommand as DatasetCommand  # what protocol_commands() gives
from moot.errors import MootError, UsageError, nearest

if TYPE_CHECKING:
    from moot.api.running import PreparedRun


def protocol_commands() -> dict[str, DatasetCommand]:
    """The protocols' own commands by name (reading them imports the protocols)."""
    from moot.protocols.registry import REGISTRY

    return REGISTRY.commands()


def dataset_labels(path: Path, columns: Sequence[str]) -> list[str]:
    """Labels the dataset yields: the values of its label mapping, else those found in it."""
    from moot.data.load import iter_items, load_dataset_spec

    spec = load_dataset_spec(path, columns)
    if spec.labels is not None:
        return sorted({v.strip() for v in spec.labels.values()})
    return sorted({item.label for item in iter_items(spec) if item.label})


def prepare_command(name: str, arguments: argparse.Namespace, dataset: PathLike, *, limit: Optional[int] = None,
                    models: Optional[Models] = None, out: Optional[PathLike] = None,
                    options: Optional[RunOptions] = None) -> "PreparedRun":
    """The run of the protocol command `name` over `dataset` (a file or a bundled demo set), checked
    before anything is written (see `prepare`). `arguments`: the command's own options, parsed
    (the dataset is added to them); `out` defaults to transcripts/ and what the protocol names
    after its options and the dataset."""
    from moot.api.bundled import find_dataset
    from moot.api.running import prepare
    from moot.engine.plan import input_columns
    from moot.protocols.registry import REGISTRY

    commands = protocol_commands()
    if name not in commands:
        raise UsageError(f"unknown command {name!r}{nearest(name, list(commands))}")
    command = commands[name]
    protocol = next(p for p in REGISTRY.all(from_yaml=False) if command in p.commands)
    data = find_dataset(dataset)
    given = argparse.Namespace(**{**vars(arguments), "dataset": data})  # as the command's parser gives them
    try:
        prepared = command.prepare(given, dataset_labels(data, input_columns(protocol)))
    except MootError:
        raise
    except ValueError as exc:
        raise UsageError(f"{data}: {exc}") from None
    folder = Path(out) if out is not None else Path("transcripts") / prepared.out
    return prepare(prepared.scenario, source=prepared.scenario_path, dataset=data, limit=limit, models=models,
                   out=folder, options=options, identity=prepared.identity)
