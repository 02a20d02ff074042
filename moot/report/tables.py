"""The report's tables, in the shape of the papers' tables: rows = protocol variant / model,
columns = datasets (and targets), the run's declared headline metric in each cell.

- by default (COLA & co., Lan et al. Tables 2-5): the metric run.json declares (F_avg for
  SemEval-2016 / P-Stance, macro-F1 for VAST, ...), one column per dataset and, with 2-12
  targets, one per target;
- a run whose protocol declares a metric set its labels define (moot.contract.metrics: e.g.
  rumour detection's accuracy, macro-F1, RF1 and NF1, S2MAD Table 1): those metrics per dataset;
- a protocol with tables of its own (moot.contract.report) gives its runs' cells itself.
A cell computed from a partial run is marked with a dagger (see `PARTIAL`). A cell of a metric over
the run's items carries its 95% interval over items (Run.interval), which table.csv writes beside
it (low, high, n, flags) and the bar charts draw as error bars.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from moot.contract.report import TableCells
from moot.metrics.classification import UNPARSED, precision_recall_f1
from moot.metrics.stats import Interval
from moot.report.runs import Run
from moot.saved.run import gold_and_predictions
from moot.views.markdown import table as markdown_table
from moot.safety.neutral import csv_safe

PARTIAL = "†"
METRIC_NAMES = {"f_avg": "F_avg", "macro_f1": "macro-F1", "accuracy": "accuracy"}
HEADLINE_TITLE = "Stance / classification protocols (declared headline metric per dataset and target)"
MAX_TARGET_COLUMNS = 12


@dataclass
class Row:
    name: str
    refs: list[str] = field(default_factory=list)
    cells: dict[str, float] = field(default_factory=dict)
    intervals: dict[str, Interval] = field(default_factory=dict)  # a cell's over items, where it has one
    partial: set[str] = field(default_factory=set)  # columns computed from a partial run
    unparsed: list[str] = field(default_factory=list)  # "unparsed/items" of each run, as refs

    def unparsed_cell(self, sep: str = ", ") -> str:
        return sep.join(self.unparsed)


@dataclass
class Table:
    kind: str
    title: str
    key: str = ""  # unique among a report's tables (file names, table.csv)
    columns: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    datasets: dict[str, list[str]] = field(default_factory=dict)  # dataset -> its columns
    rank: int = 0  # tables sort by (rank, key)

    def cell(self, row: Row, column: str) -> str:
        if column not in row.cells:
            return "–"
        return f"{row.cells[column]:.3f}" + (PARTIAL if column in row.partial else "")


def headline_cells(run: Run) -> TableCells:
    """The run's headline metric over its dataset and, with 2-12 targets, per target."""
    ds, name = run.dataset, METRIC_NAMES.get(run.metric, run.metric)
    columns: dict[str, Optional[str]] = {f"{ds} ({name})": None}
    targets = run.target_values()
    if 2 <= len(targets) <= MAX_TARGET_COLUMNS:
        columns.update({f"{ds}: {t} ({name})": t for t in targets})
    cells = {column: run.report(t).score for column, t in columns.items()}
    intervals = {column: run.interval(run.metric, t) for column, t in columns.items()}
    return TableCells("single", "single", HEADLINE_TITLE, cells, rank=0, intervals=intervals)


def cells_of(run: Run) -> list[TableCells]:
    """A run's cells in the main tables, computed from its results only (module docstring)."""
    own = run.contract.report.tables if run.contract else None
    if own is not None:
        return own(run)
    found = run.metric_set
    if found is None:
        return [headline_cells(run)]
    cells = {f"{run.dataset} {column}": run.value(metric) for metric, column in found.columns}
    intervals = {f"{run.dataset} {column}": run.interval(metric) for metric, column in found.columns}
    return [TableCells(found.name, found.name, found.title, cells, rank=2, intervals=intervals)]


def main_tables(runs: list[Run]) -> list[Table]:
    """The tables of the runs' cells; a run joins the row of its variant and model unless one of
    its columns is taken there already (then it gets a row of its own, named by its ref)."""
    tables: dict[str, Table] = {}
    for run in runs:
        for part in cells_of(run):
            table = tables.setdefault(part.key, Table(part.kind, part.title, part.key, rank=part.rank))
            cells = dict(part.cells)
            for column in cells:
                if column not in table.columns:
                    table.columns.append(column)
                    table.datasets.setdefault(run.dataset, []).append(column)
            name = f"{run.variant} · {run.model}"
            row = next((r for r in table.rows if r.name == name and not set(cells) & set(r.cells)), None)
            if row is None:
                taken = any(r.name == name for r in table.rows)
                row = Row(f"{name} ({run.ref})" if taken else name)
                table.rows.append(row)
            row.refs.append(run.ref)
            row.unparsed.append(f"{run.unparsed}/{len(run.results)}")
            row.cells.update(cells)
            row.intervals.update(part.intervals)
            if run.partial:
                row.partial.update(cells)
    return sorted(tables.values(), key=lambda t: (t.rank, t.key))


def markdown(table: Table) -> str:
    head = ["variant · model", "runs", "unparsed", *table.columns]
    return "\n".join(markdown_table(head, [[row.name, ", ".join(row.refs), row.unparsed_cell(),
                                           *(table.cell(row, c) for c in table.columns)] for row in table.rows]))


INTERVAL_CSV = ("ci_low", "ci_high", "n", "ci_flags")


def write_csv(tables: list[Table], runs: dict[str, Run], path: Path) -> None:
    """table.csv: the main tables' cells (4 decimals), each followed by its interval over items
    (`COLUMN ci_low`, `ci_high`, `n` and `ci_flags`: too few items, or why none), one line per row,
    `status` naming partial runs, `unparsed` as unparsed/items of each run (in the order of `runs`)."""
    columns = [c for t in tables for c in t.columns]
    columns = list(dict.fromkeys(columns))
    with open(path, "w", encoding="utf-8", newline="") as f:
        out = csv.writer(f)
        out.writerow(map(csv_safe, ["table", "variant_model", "runs", "status", "unparsed",
                                    *(name for c in columns for name in (c, *(f"{c} {k}" for k in INTERVAL_CSV)))]))
        for table in tables:
            for row in table.rows:
                partial = [ref for ref in row.refs if runs[ref].partial]
                status = "partial: " + " ".join(partial) if partial else "complete"
                out.writerow(map(csv_safe, [table.key, row.name, " ".join(row.refs), status, row.unparsed_cell(" "),
                                            *(v for c in columns for v in csv_cell(row, c))]))


def csv_cell(row: Row, column: str) -> tuple[object, ...]:
    """A cell of table.csv and its interval's (`INTERVAL_CSV`; empty where it has none)."""
    if column not in row.cells:
        return ("",) * (1 + len(INTERVAL_CSV))
    found = row.intervals.get(column)
    if found is None:
        return f"{row.cells[column]:.4f}", "", "", "", ""
    return (f"{row.cells[column]:.4f}", f"{found.low:.4f}", f"{found.high:.4f}", found.n,
            "; ".join((*found.flags, found.note) if found.note else found.flags))


def per_class(run: Run) -> tuple[str, list[list[object]]]:
    """Markdown and CSV rows of one run's per-class precision / recall / F1 / support."""
    gold, pred = gold_and_predictions(run.scored)
    classes = precision_recall_f1(gold, pred, run.labels)
    rep = run.report()
    cells, rows = [], []
    for label, (p, r, f1, n) in classes.items():
        cells.append([label, f"{p:.3f}", f"{r:.3f}", f"{f1:.3f}", n])
        rows.append([run.ref, label, f"{p:.4f}", f"{r:.4f}", f"{f1:.4f}", n])
    cells.append(["macro", f"{rep.macro_precision:.3f}", f"{rep.macro_recall:.3f}", f"{rep.macro_f1:.3f}", rep.n])
    rows.append([run.ref, "macro", f"{rep.macro_precision:.4f}", f"{rep.macro_recall:.4f}",
                 f"{rep.macro_f1:.4f}", rep.n])
    extra = f"accuracy {rep.accuracy:.3f}" + (f", F_avg {rep.f_avg:.3f}" if rep.f_avg is not None else "")
    lines = markdown_table(["class", "precision", "recall", "F1", "support"], cells)
    return "\n".join(lines) + f"\n\n{extra}; unparsed {rep.n_unparsed} of {rep.n}", rows


def confusion(run: Run) -> tuple[str, list[list[object]]]:
    """Markdown (rows = gold, columns = predicted + unparsed) and CSV rows of one run."""
    matrix = run.report().confusion
    cols = [*run.labels, UNPARSED]
    rows = [[run.ref, gold, c, counts[c]] for gold, counts in matrix.items() for c in cols]
    cells = [[gold, *(counts[c] for c in cols)] for gold, counts in matrix.items()]
    return "\n".join(markdown_table(["gold \\ predicted", *cols], cells)), rows


def skipped_text(run: Run) -> str:
    return ", ".join(f"{n} {why}" for why, n in run.skipped.items()) or "none"


def provenance(runs: list[Run]) -> str:
    """Where every number comes from: one line per run."""
    head = ["run", "directory", "status", "variant", "model spec(s)", "headline metric", "scenario file",
            "scenario sha256", "dataset spec", "data file", "data sha256", "items (results/planned)",
            "skipped dataset rows", "unparsed", "rescored", "date (UTC)"]
    rows = []
    for run in runs:
        m = run.record
        planned: Optional[int] = run.planned
        rows.append([
            run.ref, run.path, run.status, run.variant, run.model, run.metric_source, m.scenario_path or "?",
            m.scenario_sha256 or "?", m.dataset_path or "?", m.data_file or "?",
            m.dataset_sha256 or "?", f"{len(run.results)}/{planned if planned is not None else '?'}",
            skipped_text(run), run.unparsed, run.rescored or "—", run.date])
    return "\n".join(markdown_table(head, rows))
