"""`moot report RUN [RUN ...] [--out DIR]`: paper-style tables and plots from finished runs.

A RUN is a run folder (or a transcript file) of any protocol. Runs of labelled items become the
papers' tables (the headline metric each run.json declares, per class, confusion matrices, plots,
the dataset rows skipped by reason, provenance); conference runs become per-topic tables over
their conferences (rounds to agreement, verdicts, evaluator scores as mean ± sd). Nothing calls a
model. Writes the report folder (report.md, table.csv, per_class.csv, confusion.csv,
conference.csv, plots/) and prints the main tables. A run that cannot be read (a damaged file) is
left out in one line naming the file, the others reported, and the command exits 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from moot.api.outputs import write_report
from moot.cli.options import Parser, add_out, summary
from moot.errors import EXIT_OK, EXIT_USAGE
from moot.experiment.api import experiment_report, holds_experiment
from moot.safety.neutral import terminal_safe


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot report", description=summary(__doc__),
               epilog="examples:\n  moot report transcripts/cola-demo-stance transcripts/cola-demo-stance-rescored-judger-X"
                      "\n  moot report transcripts/drug_policy transcripts/drug_policy_no_judge",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", metavar="RUN", help="run folders or transcript files")
    add_out(p, "report folder (default reports/report-TIME)")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if holds_experiment(args.runs):
        return experiment(args.runs, args.out)
    built = write_report(args.runs, args.out)
    print(terminal_safe(built.main))
    for r in built.runs:
        print(terminal_safe(f"{r.ref}: {r.path} ({r.status}; model {r.model}; items={len(r.results)} "
                            f"unparsed={r.unparsed})"))
    for line in built.lines:
        print(terminal_safe(line))
    print(terminal_safe(f"report: {built.out / 'report.md'} ({len(built.plots)} plots)"))
    for line in built.damaged:  # the others are reported; the command still fails
        print(terminal_safe(f"error: left out: {line}"), file=sys.stderr)
    return EXIT_USAGE if built.damaged else EXIT_OK


def experiment(folders: Sequence[str], out: Optional[str]) -> int:
    """An experiment's report (moot.experiment.report): its tables printed, its folder written."""
    built = experiment_report(folders, out)
    print(terminal_safe(built.main))
    print(terminal_safe(f"report: {built.out / 'experiment.md'} ({len(built.plots)} plots; CSV and LaTeX beside it)"))
    return EXIT_OK
