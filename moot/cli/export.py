"""`moot export RUN --format md|html [--out PATH]`: a readable document of a run, from its transcripts.

RUN is a run folder or a transcript file. A folder becomes one document: its only unit, or for a
batch a contents list and a section per unit (`--unit ID` exports one). Without --out the
document is written beside the run (transcripts/cola -> transcripts/cola.html, run.jsonl ->
run.html); `--out -` writes it to standard output. Everything a model or a dataset wrote is
shown as text: escaped in HTML (whose page also forbids scripts), neutralised in Markdown.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from moot.safety.neutral import terminal_safe
from moot.api.outputs import SUFFIXES, choose_format, document, export
from moot.errors import EXIT_OK
from moot.cli.options import Parser, add_out, summary


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot export", description=summary(__doc__))
    p.add_argument("run", metavar="RUN", help="run folder or transcript file")
    p.add_argument("--format", choices=sorted(SUFFIXES),
                   help="md or html (default: from --out's suffix, else html)")
    p.add_argument("--unit", metavar="ID", help="export only this unit of a run folder")
    add_out(p, "output file, or - for standard output (default: beside the run, RUN.html / RUN.md)")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    fmt = choose_format(args.format, args.out)
    if args.out == "-":
        sys.stdout.write(document(args.run, fmt, args.unit))
        return EXIT_OK
    print(terminal_safe(f"wrote {export(args.run, fmt, args.out, args.unit)}"))
    return EXIT_OK
