"""Command-line entries a protocol adds: `moot NAME DATA.yaml [options]`.

Such a command builds the protocol's scenario from its own options and the labels the dataset
yields (e.g. judge-eval: the judge of a conference scenario as a classifier for a task), and
moot runs it over the dataset exactly as `moot run SCENARIO --dataset DATA.yaml` would: a run
folder, resumable, cached, concurrent, with the same engine, model and output options
(moot.cli.dataset_command). The protocol's package implements `options` and `prepare`; the
command line names no protocol.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from moot.scenario.blocks import ScenarioBase


@dataclass(frozen=True)
class Prepared:
    """What a protocol command runs: its scenario, the file it came from, the default run folder's
    name (under transcripts/) and more of run.json's identity (e.g. the task and prompt hashes)."""

    scenario: ScenarioBase
    scenario_path: Path
    out: str
    identity: Mapping[str, object] = field(default_factory=dict)


Options = Callable[[argparse.ArgumentParser], None]  # adds the command's own options
Prepare = Callable[[argparse.Namespace, Sequence[str]], Prepared]  # (arguments, the dataset's labels)


@dataclass(frozen=True)
class DatasetCommand:
    """`moot NAME DATA.yaml ...` (module docstring). `prepare` raises ValueError for input it
    refuses (moot prefixes the dataset's path), or a MootError naming the file itself."""

    name: str
    help: str  # one line for `moot --help`
    description: str  # the command's `--help` text
    options: Options
    prepare: Prepare
