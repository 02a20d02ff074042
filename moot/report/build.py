"""Write a report folder from finished runs of any protocol (never re-running a model).

    report.md       main tables (paper shape), provenance of every run, skipped dataset rows,
                    per-class breakdown, confusion matrices; each protocol's own sections; plot list
    table.csv       the main tables' cells
    per_class.csv   precision / recall / F1 / support per run and class (and macro)
    confusion.csv   run, gold, predicted (labels + unparsed), count
    *.csv           each protocol's own files (e.g. a conference's per-topic table: numbers only, mean, sd and n apart)
    plots/*.png     confusion matrix per run, per-dataset bars, each protocol's own plots

Runs whose units are items of a dataset go into the main tables (moot.report.tables); every
protocol present may add its part over its runs (moot.contract.report): its sections, CSV files
and plots, and its tables in the printed main text. The folder is written whole into a fresh
folder that then takes its place (moot.safety.fileset): an existing report folder is replaced.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from moot.contract.protocol import Protocol
from moot.contract.report import ReportPart
from moot.protocols.registry import REGISTRY
from moot.log.annotations import annotations_path
from moot.report import plots
from moot.errors import MootError
from moot.report.runs import Run, load_run, open_source
from moot.saved.run import RunError, protocol_of
from moot.safety.fileset import file_set
from moot.views.markdown import cell, inline
from moot.safety.neutral import csv_safe
from moot.report.tables import (
    PARTIAL, confusion, main_tables, markdown, per_class, provenance, skipped_text, write_csv,
)


SKLEARN_PRFS = ("https://scikit-learn.org/stable/modules/generated/"
                "sklearn.metrics.precision_recall_fscore_support.html")
METRICS_NOTE = (
    "Macro precision, recall and F1 are unweighted means over the protocol's full label set "
    "(run.json `labels`, the classes listed per run below), not only over the classes that occur in "
    "the gold labels: a class absent from gold has F1 0 (predicted or not, with zero_division=0) "
    "and still counts in the mean, as scikit-learn's "
    "`precision_recall_fscore_support(labels=..., average='macro', zero_division=0)` does "
    f"(its `labels` parameter: labels not present in the data \"will be 'assigned' 0 samples\"; "
    f"{SKLEARN_PRFS}). "
    "So a polarity run whose gold has no neutral item has a macro-F1 of at most 2/3. "
    "F_avg = (F1(favor) + F1(against)) / 2 over all items (SemEval-2016 Task 6 official score, "
    "Mohammad et al. 2016). Unparsed predictions are a false negative for their gold class and a "
    "false positive for none. Definitions and sources: moot/metrics/classification.py."
)


@dataclass(frozen=True)
class Built:
    out: Path
    main: str  # the main tables as Markdown (what the CLI prints)
    runs: list[Run]  # the runs of labelled items
    plots: list[Path]
    lines: list[str] = field(default_factory=list)  # the protocols' lines about their other runs
    damaged: list[str] = field(default_factory=list)  # one line per run left out: what could not be read


def contract_of(name: str) -> Optional[Protocol[Any]]:
    return REGISTRY.get(name) if name in REGISTRY else None


def open_runs(paths: Sequence[Path]) -> tuple[list[Run], list[str]]:
    """Every run that reads, referred to as R1, R2, ... in the order given (item runs with their
    results), and one line for each that does not (a damaged file: named, the others reported).
    None reads: the first one's error."""
    runs, damaged = [], []
    for i, path in enumerate(paths, 1):
        try:
            runs.append(open_one(Path(path), f"R{i}"))
        except MootError as exc:
            if len(paths) == 1:
                raise
            damaged.append(str(exc))
    if not runs:
        raise RunError(f"no run could be read: {damaged[0]}")
    return runs, damaged


def open_one(path: Path, ref: str) -> Run:
    source = open_source(path)
    contract = contract_of(protocol_of(source))
    if contract is None or contract.units.items:
        return load_run(source, ref, contract)
    return Run(source, [row for u in source.units if (row := u.result)], ref, contract=contract)


def parts(runs: Sequence[Run], folder: Path) -> list[ReportPart]:
    """Each protocol's part over its runs, in the order the protocols first appear."""
    found: list[ReportPart] = []
    present = {r.contract.name: r.contract for r in runs if r.contract is not None}
    for protocol in present.values():
        if protocol.report.part is not None:
            found.append(protocol.report.part([r for r in runs if r.contract is protocol], folder))
    return found


def build_report(paths: Sequence[Path], out: Path) -> Built:
    """The report folder of runs of any protocols (see the module docstring)."""
    runs, damaged = open_runs(paths)
    items = [r for r in runs if r.contract is None or r.contract.units.items]
    with file_set(out, in_a_report) as folder:  # never a mix of two reports
        main, written, lines = write_report(folder, runs, items, damaged)
    return Built(out, main, items, [out / p.relative_to(folder) for p in written], lines, damaged)


def in_a_report(name: str) -> bool:
    """Is `name` (in a report folder) one of a report's files, replaced with the folder?"""
    return name in ("report.md", "plots") or name.endswith(".csv")


def write_report(out: Path, runs: list[Run], items: list[Run],
                 damaged: Sequence[str] = ()) -> tuple[str, list[Path], list[str]]:
    """Write the report's files into the fresh folder `out`: (the main text, the plots, the protocols' lines)."""
    (out / "plots").mkdir(exist_ok=True)
    main, written = "", list[Path]()
    body = ["# Evaluation report", "", "Computed only from each run's results.jsonl and transcripts; no model was "
            "called to make this report.", ""]
    if damaged:
        body += ["## Runs left out (damaged)", "", *(f"- {inline(line)}" for line in damaged), ""]
    if items:
        main, items_body, written = item_sections(items, out)
        body += items_body
    added = parts(runs, out / "plots")
    if any(r.source.is_folder and annotations_path(r.path).exists() for r in runs):
        from moot.report.agreement import agreement_part  # the statistics (scipy) only for rated runs

        rated = agreement_part(runs)
        added += [rated] if rated is not None else []
    main = "\n\n".join(filter(None, [main, *(p.main for p in added)]))
    for found in added:
        body += found.sections
        written += found.plots
        for file in found.csv:
            _csv(out / file.name, list(file.head), [list(row) for row in file.rows])
    body += ["## Plots", "", *(f"- [{p.name}](plots/{p.name})" for p in written), ""]
    (out / "report.md").write_text("\n".join(body), encoding="utf-8")
    return main, written, [line for found in added for line in found.lines]


def item_sections(runs: list[Run], out: Path) -> tuple[str, list[str], list[Path]]:
    """The classification part of a report: main tables, notes, provenance, per-class breakdowns."""
    by_ref = {r.ref: r for r in runs}
    tables = main_tables(runs)
    main = "\n\n".join(f"### {t.title}\n\n{markdown(t)}" for t in tables)
    partial = [r.ref for r in runs if r.partial]
    note = (f"{PARTIAL} computed from a partial run ({', '.join(partial)}): fewer results than planned "
            f"items, or failed items." if partial else "All runs are complete.")
    main += (f"\n\n{note} Unparsed predictions (replies mapped onto no label) count as wrong; the "
             f"unparsed column gives unparsed/items of each run, in the order of its runs.")
    write_csv(tables, by_ref, out / "table.csv")
    written = [plots.confusion_plot(r, out / "plots") for r in runs]
    for table in tables:
        written += plots.bar_plots(table, out / "plots")
    sections, class_rows, matrix_rows = [], [], []
    for run in runs:
        classes, rows = per_class(run)
        class_rows += rows
        matrix, rows = confusion(run)
        matrix_rows += rows
        sections.append(f"### {cell(f'{run.ref}: {run.variant} · {run.model} · {run.dataset} ({run.status})')}\n\n"
                        f"{classes}\n\nConfusion matrix (rows = gold):\n\n{matrix}")
    _csv(out / "per_class.csv", ["run", "class", "precision", "recall", "f1", "support"], class_rows)
    _csv(out / "confusion.csv", ["run", "gold", "predicted", "count"], matrix_rows)
    skipped = [f"- {inline(f'{r.ref} ({r.dataset}): {skipped_text(r)}')}" for r in runs if r.skipped]
    body = [
        "## Main table", "", main, "",
        "## How the metrics are computed", "", METRICS_NOTE, "",
        "## Runs (provenance of every number)", "", provenance(runs), "",
        "Date: first invocation .. last result written (UTC); ≈ marks a first date estimated from "
        "file times, for a run directory made before run.json recorded dates. Headline metric: the one "
        "run.json declares (from the scenario or the dataset spec), never guessed from a file name.", "",
        "## Dataset rows skipped", "",
        *(["Rows the dataset loader left out, by reason (run.json `skipped_rows`); they are in no metric:", "",
            *skipped] if skipped else ["No run skipped a dataset row."]), "",
        "## Per-class breakdown and confusion matrices", "", "\n\n".join(sections), "",
    ]
    return main, body, written


def _csv(path: Path, head: list[str], rows: list[list[object]]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(map(csv_safe, head))
        writer.writerows(map(csv_safe, row) for row in rows)
