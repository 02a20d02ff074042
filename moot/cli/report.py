"""`moot report RUN [RUN ...] [--out DIR]`: paper-style tables and plots from finished runs.

A RUN is a run folder (or a transcript file) of any protocol. Runs of labelled items become the
papers' tables (the headline metric each run.json declares, per class, confusion matrices, plots,
the dataset rows skipped by reason, provenance); conference runs become per-topic tables over
their conferences (rounds to agreement, verdicts, evaluator scores as mean ± sd). Nothing calls a
model. Writes the report folder (report.md, table.csv, per_class.csv, confusion.csv,
conference.csv, plots/) and prints the main tables.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path
from typing import Sequence

from moot.cli import EXIT_OK
from moot.cli.options import Parser, add_out
from moot.report import build_report
from moot.views.neutral import terminal_safe


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot report", description=__doc__.splitlines()[0],
               epilog="examples:\n  moot report transcripts/cola-vast transcripts/cola-vast-rescored-judger-X"
                      "\n  moot report transcripts/drug_policy transcripts/drug_policy_no_judge",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", metavar="RUN", help="run folders or transcript files")
    add_out(p, "report folder (default reports/report-TIME)")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    out = Path(args.out) if args.out else Path("reports") / f"report-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    built = build_report([Path(r) for r in args.runs], out)
    print(terminal_safe(built.main))
    for r in built.runs:
        print(terminal_safe(f"{r.ref}: {r.path} ({r.status}; model {r.model}; items={len(r.results)} "
                            f"unparsed={r.unparsed})"))
    for line in built.lines:
        print(terminal_safe(line))
    print(f"report: {out / 'report.md'} ({len(built.plots)} plots)")
    return EXIT_OK
