"""Reading saved runs: a run folder (or one transcript file), its units, their events, its metrics.

Nothing is loaded before it is asked for. Opening a run reads run.json and results.jsonl (one
line per finished unit), never a transcript; `units()` yields the units one by one with their
results rows; a unit's transcript is read when its events (or a measure that needs it) are asked
for, one unit at a time, so a 10,000-unit run is never held in memory whole.

Metrics come from the protocol's declared metrics hook (moot.contract.metrics): each unit's
measures (`correct`, a conference's rounds to agreement, ...), their means over the run, and for
labelled runs every classification metric with the headline one run.json declares.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Optional, Union

from moot.api.options import PathLike
from moot.contract.metrics import CORRECT, UnitRecord
from moot.contract.units import UnitKey, unit_key
from moot.saved.records import ResultRow
from moot.saved.run import gold_and_predictions, protocol_of, row_of
from moot.saved.source import RunSource, UnitRef, open_run as open_source
from moot.log.events import Call, EventBase
from moot.log.transcript import Transcript

if TYPE_CHECKING:
    from moot.contract.metrics import Measure
    from moot.contract.registry import AnyProtocol
    from moot.metrics.classification import MetricReport
    from moot.report.runs import Run

RunLike = Union[PathLike, "SavedRun"]  # a run folder or transcript file, or a run opened already
RunsLike = Union[RunLike, Iterable[RunLike]]


class SavedUnit:
    """One unit of a saved run: its id, results row (None: unfinished) and transcript file."""

    def __init__(self, run: "SavedRun", ref: UnitRef):
        self.run, self.ref = run, ref
        self._transcript: Optional[Transcript] = None

    @property
    def id(self) -> str:
        return self.ref.id

    @property
    def path(self) -> Path:
        """Its transcript file."""
        return self.ref.path

    @cached_property
    def result(self) -> Optional[ResultRow]:
        """Its results row, typed; None: it did not finish. A transcript file's one unit has its
        row read from its `outcome` event."""
        if self.ref.row is not None or self.run.is_folder:
            return self.ref.result
        return row_of(self.ref, self.transcript())

    @property
    def row(self) -> Optional[Mapping[str, Any]]:
        """Its results row as written (a protocol's own keys too); None: it did not finish."""
        if self.ref.row is not None or self.result is None:
            return self.ref.row
        return self.result.model_dump(exclude_unset=True)

    @property
    def finished(self) -> bool:
        return self.result is not None

    @property
    def status(self) -> str:
        """`completed`, else how its last run ended (`failed`, `interrupted`), or `unfinished`."""
        if self.result is not None:
            return self.result.state
        end = self.transcript().finished
        return end.status if end is not None else "unfinished"

    @property
    def prediction(self) -> Optional[str]:
        return self.result.prediction if self.result is not None else None

    @property
    def gold(self) -> Optional[str]:
        return self.result.gold if self.result is not None else None

    @property
    def _key(self) -> UnitKey:
        """What identifies it across runs (moot.contract.units): its id, variant and seed."""
        return unit_key(self.result or ResultRow(id=self.id), self.run.source.record)

    @property
    def variant(self) -> dict[str, str]:
        """What this unit of a batch changes (`{"seed": "2"}`); empty for other units."""
        return dict(self._key.variant)

    @property
    def seed(self) -> Optional[int]:
        """Its seed: the variant's, else the scenario's (what pairs runs of a scenario across runs)."""
        return self._key.seed

    def transcript(self) -> Transcript:
        """Its transcript, loaded strictly (a damaged one is an error naming its line); kept while
        this object lives."""
        if self._transcript is None:
            self._transcript = self.ref.load()
        return self._transcript

    def events(self) -> Iterator[EventBase]:
        return iter(self.transcript().events)

    def calls(self) -> Iterator[Call]:
        """Its model calls (`call` events): role, stage, model, usage, latency, cached, ..."""
        return (event for event in self.events() if isinstance(event, Call))

    def record(self) -> UnitRecord:
        """The unit as the protocol's measures see it (moot.contract.metrics)."""
        return UnitRecord(self.result or ResultRow(id=self.id), tuple(self.run.labels), self.transcript)

    def measures(self) -> dict[str, Optional[float]]:
        """Its value of each measure its protocol declares (`correct`, a conference's
        `rounds_to_agreement`, ...); None: no such value (an unlabelled unit's correctness, a
        unit that did not finish)."""
        measures = self.run.measures
        if self.row is None:
            return {m.name: None for m in measures}
        record = self.record()
        return {m.name: m.of(record) for m in measures}

    @property
    def correct(self) -> Optional[bool]:
        """Whether its prediction is the gold label (unparsed is wrong); None: no gold label."""
        value = CORRECT.of(self.record()) if self.row is not None else None
        return None if value is None else value == 1.0


@dataclass(frozen=True)
class MeasureSummary:
    """One measure over a run's finished units: its mean over the `n` units that have a value."""

    name: str
    help: str
    mean: Optional[float]
    n: int


@dataclass(frozen=True)
class RunMetrics:
    """A run's metrics. `headline` is what a comparison leads with: for labelled units the metric
    run.json declares (`macro_f1`, `accuracy`, `f_avg`, ...), else the protocol's headline
    measure; `classification` holds every classification metric of labelled runs."""

    headline: str
    value: Optional[float]
    measures: Mapping[str, MeasureSummary]
    classification: Optional["MetricReport"] = None


class SavedRun:
    """A run folder (or a transcript file) read back; nothing runs and nothing is written."""

    def __init__(self, source: RunSource):
        self.source = source

    def __repr__(self) -> str:
        return f"SavedRun({str(self.path)!r}, protocol={self.protocol!r}, units={len(self)})"

    @property
    def path(self) -> Path:
        return self.source.path

    @property
    def name(self) -> str:
        return self.source.name

    @property
    def is_folder(self) -> bool:
        return self.source.is_folder

    @property
    def meta(self) -> Mapping[str, Any]:
        """Its run.json: what ran (protocol, scenario, dataset, models, labels, dates)."""
        return self.source.meta

    @cached_property
    def protocol(self) -> str:
        return protocol_of(self.source)

    @cached_property
    def contract(self) -> Optional["AnyProtocol"]:
        """Its registered protocol (None: a protocol this installation does not know)."""
        from moot.contract.registry import PROTOCOLS

        return PROTOCOLS.get(self.protocol) if self.protocol in PROTOCOLS else None

    @cached_property
    def labels(self) -> list[str]:
        """The labels of its units (run.json's; else those found in its results)."""
        return self.summary.labels

    @property
    def measures(self) -> tuple["Measure", ...]:
        """The measures its protocol declares (none for a protocol this installation does not know)."""
        return self.contract.metrics.measures if self.contract else ()

    def __len__(self) -> int:
        """Its units: finished ones and those with a transcript but no result."""
        return len(self.source.units)

    def units(self) -> Iterator[SavedUnit]:
        """Its units in order (finished first, in results order), one at a time."""
        return (SavedUnit(self, ref) for ref in self.source.units)

    def unit(self, unit_id: str) -> SavedUnit:
        """The unit called `unit_id`; an unknown id is an error naming the nearest one."""
        return SavedUnit(self, self.source.unit(unit_id))

    def events(self) -> Iterator[tuple[SavedUnit, EventBase]]:
        """Every event of every unit, unit by unit (one transcript in memory at a time)."""
        for unit in self.units():
            for event in unit.events():
                yield unit, event

    @cached_property
    def summary(self) -> "Run":
        """The run as `moot report` reads it (status, planned units, models, dates)."""
        from moot.report.runs import Run

        rows = [row for unit in self.units() if (row := unit.result) is not None]
        return Run(self.source, rows, contract=self.contract)

    @property
    def status(self) -> str:
        """`complete`, `partial` (fewer results than planned units, or units that failed or were
        cut short), or `unknown` (run.json states no plan)."""
        if self.summary.planned is None:
            return "partial" if self.summary.failed else "unknown"
        return "partial" if self.summary.partial else "complete"

    def metrics(self) -> RunMetrics:
        """Its measures over the finished units and, for labelled units, the classification
        metrics (see RunMetrics). A measure that reads transcripts loads them one at a time."""
        from moot.metrics.classification import summarize

        values: dict[str, list[float]] = {m.name: [] for m in self.measures}
        for unit in self.units():
            if unit.row is not None:
                for name, value in unit.measures().items():
                    if value is not None:
                        values[name].append(value)
        measures = {m.name: MeasureSummary(m.name, m.help, statistics.fmean(values[m.name]) if values[m.name] else None,
                                           len(values[m.name])) for m in self.measures}
        run = self.summary
        if run.scored and run.labels:
            gold, predictions = gold_and_predictions(run.scored)
            report = summarize(gold, predictions, run.labels, metric=run.metric)
            return RunMetrics(run.metric, report.score, measures, report)
        headline = self.contract.metrics.headline if self.contract else CORRECT.name
        found = measures.get(headline)
        return RunMetrics(headline, found.mean if found else None, measures)


def open_run(path: RunLike) -> SavedRun:
    """A run folder or a transcript file, opened (its run.json and results rows; no transcript)."""
    if isinstance(path, SavedRun):
        return path
    return SavedRun(open_source(Path(path)))


def find_runs(path: PathLike) -> list[Path]:
    """A run folder or transcript file as itself; any other folder as the run folders inside it
    (an experiment's cells, a folder of runs), found by their run.json, in path order."""
    root = Path(path)
    if root.is_file() or (root / "run.json").is_file() or (root / "results.jsonl").is_file():
        return [root]
    inside = []
    for folder, subfolders, files in os.walk(root):
        if "run.json" in files:
            inside.append(Path(folder))
            subfolders.clear()  # a run folder's own files are not searched
        subfolders.sort()
    return sorted(inside) or [root]


def each_run(runs: RunsLike) -> list[RunLike]:
    """Every run named, unopened: run folders, transcript files, the run folders inside any other
    folder (find_runs), SavedRuns."""
    if isinstance(runs, (str, os.PathLike, SavedRun)):
        runs = [runs]
    found: list[RunLike] = []
    for run in runs:
        found += [run] if isinstance(run, SavedRun) else find_runs(run)
    return found


def open_runs(runs: RunsLike) -> list[SavedRun]:
    """Every run named (each_run), opened."""
    return [open_run(run) for run in each_run(runs)]
