"""Write a report folder from finished runs of any protocol (never re-running a model).

    report.md       main tables (paper shape), provenance of every run, skipped dataset rows,
                    per-class breakdown, confusion matrices; conferences per topic; plot list
    table.csv       the main tables' cells
    per_class.csv   precision / recall / F1 / support per run and class (and macro)
    confusion.csv   run, gold, predicted (labels + unparsed), count
    conference.csv  per conference run, variant and topic: closings, rounds, verdicts, scores, coverage
    coverage.csv    per conference run, variant, topic and reference item: conferences that covered it
    plots/*.png     confusion matrix per run, per-dataset bars, S2MAD rounds / early detection

The folder is written whole into a fresh folder that then takes its place (moot.safety.fileset).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from moot.protocols.conference import report as conference
from moot.report import plots
from moot.protocols.conference.report import ConferenceRun, load_conference_run
from moot.report.runs import Run, is_conference_run, load_run, open_source
from moot.safety.fileset import file_set
from moot.report.tables import (
    PARTIAL, confusion, main_tables, markdown, per_class, provenance, skipped_text, write_csv,
)


REPORT_FILES = {"report.md", "table.csv", "per_class.csv", "confusion.csv", "conference.csv", "coverage.csv",
                "plots"}  # what a report folder holds: an existing one is replaced whole
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
    runs: list[Run]
    plots: list[Path]
    conferences: list[ConferenceRun] = field(default_factory=list)


def build_report(paths: Sequence[Path], out: Path) -> Built:
    """The report folder of runs of any protocols: item runs in paper-shaped tables, conference
    runs per topic; a mix gives both."""
    conferences, runs = [], []
    for i, path in enumerate(paths, 1):
        src, ref = open_source(Path(path)), f"R{i}"
        if is_conference_run(src):
            conferences.append(load_conference_run(src, ref))
        else:
            runs.append(load_run(src, ref))
    with file_set(out, REPORT_FILES.__contains__) as folder:  # never a mix of two reports
        main, written = write_report(folder, runs, conferences)
    return Built(out, main, runs, [out / p.relative_to(folder) for p in written], conferences)


def write_report(out: Path, runs: list[Run], conferences: list[ConferenceRun]) -> tuple[str, list[Path]]:
    """Write the report's files into the fresh folder `out`; the main tables and the plots."""
    (out / "plots").mkdir(exist_ok=True)
    main, body, written = "", ["# Evaluation report", "",
                               "Computed only from each run's results.jsonl and transcripts; no model was called "
                               "to make this report.", ""], []
    if runs:
        items_main, items_body, written = item_sections(runs, out)
        main, body = items_main, body + items_body
    if conferences:
        coverage = conference.coverage_markdown(conferences)
        text = "\n\n".join(filter(None, [*(conference.markdown(c) for c in conferences), coverage]))
        main = "\n\n".join(filter(None, [main, *(conference.markdown(c, criteria=False) for c in conferences),
                                          coverage]))
        _csv(out / "conference.csv", conference.CSV_HEAD, [r for c in conferences for r in conference.csv_rows(c)])
        if coverage:
            _csv(out / "coverage.csv", conference.COVERAGE_CSV_HEAD, conference.coverage_csv_rows(conferences))
        body += ["## Conferences: per topic over each run's conferences", "", CONFERENCE_NOTE, "", text, "",
                 "## Conference runs (provenance)", "", conference.provenance(conferences), ""]
    body += ["## Plots", "", *(f"- [{p.name}](plots/{p.name})" for p in written), ""]
    (out / "report.md").write_text("\n".join(body), encoding="utf-8")
    return main, written


CONFERENCE_NOTE = (
    "Per topic, over the completed conferences of a run (conferences that differ only by seed pooled): "
    "how the topic closed (the judge's AGREEMENT, the deciding moderator's NEXT_TOPIC, or the round cap), "
    "the rounds it took to agree, the judge's verdicts, the evaluator's overall score (in a rescored "
    "folder: the rescoring's), and the fraction of the topic's reference outcome the debate covered, as "
    "mean ± sample standard deviation (n = conferences). Reference coverage per item: conferences whose "
    "debate covered the item (the assessor's quote found in a participant's turn) / conferences assessed; "
    "unverified (said covered, quote not found) and unparsed answers are not counted as covered.")


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
    skipped = [f"- {r.ref} ({r.dataset}): {skipped_text(r)}" for r in runs if r.skipped]
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


def _csv(path: Path, head: list[str], rows: list[list]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(head)
        writer.writerows(rows)
