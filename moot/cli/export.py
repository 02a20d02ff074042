"""`export TRANSCRIPT --format md|html [--out PATH]`: a readable document of a run, from its transcript.

Without --out the document is written beside the transcript (run.jsonl -> run.html); `--out -`
writes it to standard output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from moot.render_html import render_html
from moot.render_md import render_markdown
from moot.transcript import load

RENDERERS = {"md": (render_markdown, ".md"), "html": (render_html, ".html")}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="moot export", description=__doc__.splitlines()[0])
    p.add_argument("transcript", type=Path, help="transcript JSONL file")
    p.add_argument("--format", choices=sorted(RENDERERS),
                   help="md or html (default: from --out's suffix, else html)")
    p.add_argument("--out", help="output file, or - for standard output (default: beside the transcript)")
    return p


def choose_format(fmt: Optional[str], out: Optional[str]) -> str:
    if fmt:
        return fmt
    return "md" if out and Path(out).suffix.lower() in (".md", ".markdown") else "html"


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    fmt = choose_format(args.format, args.out)
    render, suffix = RENDERERS[fmt]
    text = render(load(args.transcript))
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.out) if args.out else args.transcript.with_suffix(suffix)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"error: --out {out}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0
