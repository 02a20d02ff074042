"""Write a report folder from finished batch runs (never re-running a model).

    report.md       main tables (paper shape), provenance of every run, per-class breakdown,
                    confusion matrices, plot list
    table.csv       the main tables' cells
    per_class.csv   precision / recall / F1 / support per run and class (and macro)
    confusion.csv   run, gold, predicted (labels + unparsed), count
    plots/*.png     confusion matrix per run, per-dataset bars, S2MAD rounds / early detection
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from moot.report import plots
from moot.report.runs import Run, load_run
from moot.report.tables import PARTIAL, confusion, main_tables, markdown, per_class, provenance, write_csv


@dataclass(frozen=True)
class Built:
    out: Path
    main: str  # the main tables as Markdown (what the CLI prints)
    runs: list[Run]
    plots: list[Path]


def build_report(run_dirs: Sequence[Path], out: Path) -> Built:
    runs = [load_run(Path(d), f"R{i}") for i, d in enumerate(run_dirs, 1)]
    by_ref = {r.ref: r for r in runs}
    out.mkdir(parents=True, exist_ok=True)
    (out / "plots").mkdir(exist_ok=True)
    tables = main_tables(runs)
    main = "\n\n".join(f"### {t.title}\n\n{markdown(t)}" for t in tables)
    partial = [r.ref for r in runs if r.partial]
    note = (f"{PARTIAL} computed from a partial run ({', '.join(partial)}): fewer results than planned "
            f"items, or failed items." if partial else "All runs are complete.")
    main += f"\n\n{note} Unparsed predictions count as wrong; see the unparsed column of each run below."
    write_csv(tables, by_ref, out / "table.csv")
    written = [plots.confusion_plot(r, out / "plots") for r in runs]
    for table in tables:
        written += plots.bar_plots(table, out / "plots")
    written += plots.rounds_plots(runs, out / "plots") + plots.early_plots(runs, out / "plots")
    sections, class_rows, matrix_rows = [], [], []
    for run in runs:
        classes, rows = per_class(run)
        class_rows += rows
        matrix, rows = confusion(run)
        matrix_rows += rows
        sections.append(f"### {run.ref}: {run.variant} · {run.model} · {run.dataset} ({run.status})\n\n"
                        f"{classes}\n\nConfusion matrix (rows = gold):\n\n{matrix}")
    _csv(out / "per_class.csv", ["run", "class", "precision", "recall", "f1", "support"], class_rows)
    _csv(out / "confusion.csv", ["run", "gold", "predicted", "count"], matrix_rows)
    body = [
        "# Evaluation report", "",
        "Computed only from each run's results.jsonl; no model was called to make this report.", "",
        "## Main table", "", main, "",
        "## Runs (provenance of every number)", "", provenance(runs), "",
        "## Per-class breakdown and confusion matrices", "", "\n\n".join(sections), "",
        "## Plots", "", *(f"- [{p.name}](plots/{p.name})" for p in written), "",
    ]
    (out / "report.md").write_text("\n".join(body), encoding="utf-8")
    return Built(out, main, runs, written)


def _csv(path: Path, head: list[str], rows: list[list]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(head)
        writer.writerows(rows)
