"""A run as a report reads it: its results (moot.saved.run.RunResults) and its registered protocol.

What the protocol adds is its run's row name (its `report.variant` hook, else the scenario file's
stem) and the metric sets its labels define (moot.contract.metrics). Every transcript of a
per-item run is loaded strictly (a damaged one is an error naming its line); an item's target (for
per-target columns) is its `run_started` input. Runs whose units are runs of the scenario are read
by their protocol's report hook (moot.contract.report), from their transcripts; `Run` only holds
their source and ref.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from moot.contract.metrics import MetricSet
from moot.contract.protocol import Protocol
from moot.saved.files import RunFolderError
from moot.saved.run import RunError, RunResults, row_of
from moot.saved.source import RunSource, open_run


@dataclass
class Run(RunResults):
    contract: Optional[Protocol[Any]] = None  # its registered protocol (None: not one moot knows)

    @property
    def variant(self) -> str:
        """Its row name: the protocol's (moot.contract.report), else the scenario file's stem."""
        named = self.contract.report.variant if self.contract else None
        if named is not None:
            return named(self.record)
        return self.record.scenario_name or self.protocol

    @property
    def metric_set(self) -> Optional[MetricSet]:
        """The metric set its protocol declares that its labels define (moot.contract.metrics)."""
        return self.contract.metrics.set_for(self.labels) if self.contract else None

    @property
    def by_headline(self) -> bool:
        """Whether its main-table cells are its headline metric (no protocol tables, no metric set)."""
        return self.metric_set is None and (self.contract is None or self.contract.report.tables is None)


def open_source(path: Path) -> RunSource:
    try:
        return open_run(path)
    except RunFolderError as exc:
        raise RunError(str(exc)) from None


def load_run(source: RunSource, ref: str = "", contract: Optional[Protocol[Any]] = None) -> Run:
    """A per-item run: its results (a transcript file: its outcome) and the items' targets. Every
    transcript is read strictly: a damaged one is an error naming its line, so a run is never
    reported complete over a transcript that does not load."""
    loaded = [(u, u.load()) for u in source.units]
    triples = [(u, t, u.result if source.is_folder else row_of(u, t)) for u, t in loaded]
    run = Run(source, [r for _, _, r in triples if r], ref, contract=contract)
    if not run.scored:
        raise RunError(f"{source.path}: no result with a gold label to score")
    targets = {r.id: (t.started.inputs or {}).get("target") for _, t, r in triples if r}
    run.targets = {k: v for k, v in targets.items() if v}
    return run
