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
from pathlib import Path
from typing import Optional, Sequence

from moot.cli import EXIT_OK, EXIT_USAGE
from moot.cli.options import Parser, add_out
from moot.safety.diskio import is_environment_error, write_atomic
from moot.safety.places import usable_out
from moot.views.html import render_html
from moot.views.markdown import render_markdown
from moot.engine.source import RunSource, open_run

RENDERERS = {"md": (render_markdown, ".md"), "html": (render_html, ".html")}


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot export", description=__doc__.splitlines()[0])
    p.add_argument("run", metavar="RUN", help="run folder or transcript file")
    p.add_argument("--format", choices=sorted(RENDERERS),
                   help="md or html (default: from --out's suffix, else html)")
    p.add_argument("--unit", metavar="ID", help="export only this unit of a run folder")
    add_out(p, "output file, or - for standard output (default: beside the run, RUN.html / RUN.md)")
    return p


def choose_format(fmt: Optional[str], out: Optional[str]) -> str:
    if fmt:
        return fmt
    return "md" if out and Path(out).suffix.lower() in (".md", ".markdown") else "html"


def document(source: RunSource, unit: Optional[str], fmt: str) -> str:
    units = [source.unit(unit)] if unit is not None else source.units
    transcripts = [u.load() for u in units]
    protocol = transcripts[0].protocol if transcripts else source.meta.get("protocol", "")
    title = f"{source.name} ({protocol}, {len(transcripts)} units)"
    facts = [("Run folder", str(source.path)), ("Protocol", protocol), ("Units", str(len(transcripts)))]
    facts += [(k, str(source.meta[k])) for k in ("scenario_path", "dataset_path", "created", "last_invoked")
              if source.meta.get(k)]
    render, _ = RENDERERS[fmt]
    return render(transcripts, title, facts)


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    fmt = choose_format(args.format, args.out)
    source = open_run(args.run)
    if not source.units:
        print(f"error: {source.path}: the run has no transcripts yet", file=sys.stderr)
        return EXIT_USAGE
    text = document(source, args.unit, fmt)
    if args.out == "-":
        sys.stdout.write(text)
        return EXIT_OK
    out = usable_out(Path(args.out) if args.out else default_out(source, args.unit, RENDERERS[fmt][1]), "file")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, text)
    except OSError as exc:
        if is_environment_error(exc):
            raise
        print(f"error: --out {out}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {out}")
    return EXIT_OK


def default_out(source: RunSource, unit: Optional[str], suffix: str) -> Path:
    if not source.is_folder:
        return source.path.with_suffix(suffix)
    name = source.path.name + (f"-{unit}" if unit else "")
    return source.path.with_name(name + suffix)
