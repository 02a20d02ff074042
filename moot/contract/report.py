"""What a protocol adds to `moot report`: its runs' row names, their cells in the main tables, and
its own sections, CSV files and plots — all computed from saved runs, never by calling a model.

moot.report assembles a report from these parts: it opens every run (moot.saved.run.RunResults),
puts labelled item runs in the main tables (by default: the run's headline metric per dataset
and target, or the protocol's metric set when the run's labels define it; moot.contract.metrics),
writes the per-class breakdowns, confusion matrices and generic plots, then asks each protocol
present for its `part` over its own runs (a conference's per-topic tables, S2MAD's rounds and
early-detection plots, ...) and writes what the parts give.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Sequence

from moot.saved.records import RunMeta
from moot.saved.run import RunResults

if TYPE_CHECKING:
    from moot.metrics.stats import Interval


@dataclass(frozen=True)
class TableCells:
    """One run's cells in one of the report's main tables; runs naming the same `key` share it."""

    key: str  # unique among a report's tables (file names, table.csv)
    kind: str  # the table's family (plot file names)
    title: str
    cells: Mapping[str, float]
    rank: int = 1  # tables sort by (rank, key): headline tables 0, protocols' own 1, metric sets 2
    intervals: Mapping[str, "Interval"] = field(default_factory=dict)  # a cell's over items (Run.interval), if any


@dataclass(frozen=True)
class CsvFile:
    """A CSV file of a report folder."""

    name: str
    head: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]


@dataclass(frozen=True)
class ReportPart:
    """What a protocol adds to a report over its runs."""

    main: str = ""  # Markdown printed on the terminal as the main tables
    sections: tuple[str, ...] = ()  # lines of report.md (headings included)
    csv: tuple[CsvFile, ...] = ()
    plots: tuple[Path, ...] = ()
    lines: tuple[str, ...] = ()  # one line per run, printed after the tables


VariantName = Callable[[RunMeta], str]  # run.json -> the run's row name
Tables = Callable[[RunResults], list[TableCells]]  # a labelled run -> its cells in the main tables
Part = Callable[[Sequence[RunResults], Path], ReportPart]  # (this protocol's runs, the plots folder)


@dataclass(frozen=True)
class Reporting:
    """A protocol's report hooks; None: the generic behaviour (module docstring)."""

    variant: Optional[VariantName] = None  # default: the scenario file's stem
    tables: Optional[Tables] = None  # default: headline metric, or the metric set that applies
    part: Optional[Part] = None
