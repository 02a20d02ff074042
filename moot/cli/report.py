"""`report RUN [RUN ...] [--out DIR]`: paper-style tables and plots from finished batch runs.

Reads each run directory's run.json and results.jsonl (never calls a model), writes the report
folder (report.md, table.csv, per_class.csv, confusion.csv, plots/) and prints the main table.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path
from typing import Sequence

from moot.report import build_report


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="moot report",
                                description="Build an evaluation report from finished batch runs.")
    p.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="batch run directories (with run.json)")
    p.add_argument("--out", type=Path, help="report folder (default reports/report-TIME)")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    out = args.out or Path("reports") / f"report-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    built = build_report(args.runs, out)
    print(built.main)
    for r in built.runs:
        print(f"{r.ref}: {r.path} ({r.status}; model {r.model}; items={len(r.results)} unparsed={r.unparsed})")
    print(f"report: {out / 'report.md'} ({len(built.plots)} plots)")
    return 0
