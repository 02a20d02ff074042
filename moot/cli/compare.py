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
from typing import Sequence

from moot.cli.options import Parser, summary
from moot.errors import EXIT_OK
from moot.experiment.api import compare_runs
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
    args = parser().parse_args(argv)
    compared = compare_runs(args.a, args.b, args.metric)
    print(terminal_safe(compared.markdown))
    if compared.dropped:
        print(terminal_safe(f"paired {compared.paired} units; dropped {compared.dropped} without their pair "
                            f"(in A only: {unpaired(compared.only_a)}; in B only: {unpaired(compared.only_b)})"))
    if args.out:
        compared.write(args.out)
    return EXIT_OK


def unpaired(ids: Sequence[str], shown: int = 3) -> str:
    """How many items the other run lacks, and the first few ids."""
    return f"{len(ids)}" + (f", e.g. {', '.join(ids[:shown])}" if ids else "")
