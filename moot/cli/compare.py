"""`moot compare RUN_A RUN_B [--metric M] [--out DIR]`: two runs of labelled items, paired on their items.

A against B (the reference) on the items both ran (same ids; with seeds, the same seeds): each
run's metric with its bootstrap interval, Δ = A − B (the sign the viewer's compare page prints too)
with a paired bootstrap interval, the paired test, the minimum detectable Δ
(moot.experiment.analysis). Runs over different datasets (their run.json fingerprints differ,
even when their names or ids agree) or sharing no item are refused (exit 2); runs sharing some
say how many units were paired and how many dropped. Nothing calls a model.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Mapping, Sequence

from moot.cli.options import Parser, summary
from moot.errors import EXIT_OK, UsageError
from moot.safety.neutral import terminal_safe


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot compare", description=summary(__doc__),
               epilog="example:\n  moot compare transcripts/cola-demo-stance transcripts/cola_direct-demo-stance --metric accuracy",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", metavar="RUN_A", help="a run folder (the arm compared)")
    p.add_argument("b", metavar="RUN_B", help="a run folder (the reference)")
    p.add_argument("--metric", help="accuracy, macro_f1, f_avg, rf1, nf1 (default: A's headline metric)")
    p.add_argument("--out", help="also write the table there as Markdown, CSV and LaTeX")
    return p


def run(argv: Sequence[str]) -> int:
    from moot.experiment.analysis import Column, analyse
    from moot.experiment.report import cell_of_run
    from moot.experiment.tables import arms_grid
    from moot.report.formats import latex, markdown, to_csv
    from moot.safety.diskio import write_atomic

    args = parser().parse_args(argv)
    found_a, found_b = cell_of_run(Path(args.a), "A"), cell_of_run(Path(args.b), "B")
    a, b = found_a.cell, dataclasses.replace(found_b.cell, seed=found_a.cell.seed)  # two single runs pair by item
    if found_a.dataset_sha256 and found_b.dataset_sha256 and found_a.dataset_sha256 != found_b.dataset_sha256:
        alike = " that share a name but not their content" if a.dataset == b.dataset else ""
        raise UsageError(f"moot compare: {args.a} and {args.b} ran on different datasets{alike} ({a.dataset}, "
                         f"sha256 {found_a.dataset_sha256[:12]} / {b.dataset}, sha256 {found_b.dataset_sha256[:12]}): "
                         "an id in both need not be the same item; compare runs over one dataset")
    if a.labels != b.labels:
        raise UsageError(f"moot compare: {args.a} and {args.b} have different labels "
                         f"({', '.join(a.labels)} / {', '.join(b.labels)})")
    if not set(a.gold) & set(b.gold):
        raise UsageError(f"moot compare: {args.a} and {args.b} share no item (compare runs over the same items)")
    metric = args.metric or found_a.metric
    analysis = analyse([a, b], Column(a.dataset, metric), a.model, ["A", "B"], "B")
    grid = arms_grid(analysis, {"A": f"A: {args.a}", "B": f"B: {args.b}"}, {"A": a.model, "B": b.model})
    print(terminal_safe(markdown(grid)))
    found = analysis.comparison("A")
    if found is not None and found.dropped:
        print(terminal_safe(f"paired {found.paired} units; dropped {found.dropped} without their pair "
                            f"(in A only: {unpaired(a.gold, b.gold)}; in B only: {unpaired(b.gold, a.gold)})"))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_atomic(out / "compare.md", markdown(grid) + "\n")
        write_atomic(out / "compare.csv", to_csv(grid))
        write_atomic(out / "compare.tex", latex(grid))
    return EXIT_OK


def unpaired(ours: Mapping[str, str], theirs: Mapping[str, str], shown: int = 3) -> str:
    """How many of our items the other run lacks, and the first few ids."""
    ids = sorted(set(ours) - set(theirs))
    return f"{len(ids)}" + (f", e.g. {', '.join(ids[:shown])}" if ids else "")
