"""`moot new NAME [--protocol PROTOCOL] [--dir DIR]`: a new scenario, NAME.yaml, from the protocol's
bundled example.

The file is the protocol's example scenario (scenarios/<example>.yaml, comments kept) under a new
title, with a `$schema` line for editors. It is valid as written and runs with `--model scripted`
(a per-item protocol on the item under `input:`), so a new user edits a working scenario instead
of assembling one from the docs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from moot.api.authoring import DEFAULT_PROTOCOL, new_scenario, protocols
from moot.cli.options import Parser, summary
from moot.safety.neutral import terminal_safe


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot new", description=summary(__doc__))
    p.add_argument("--protocol", choices=protocols(), default=DEFAULT_PROTOCOL, metavar="PROTOCOL",
                   help=f"the protocol: {', '.join(protocols())} (default {DEFAULT_PROTOCOL}); the file starts "
                        "as its bundled example")
    p.add_argument("stem", metavar="NAME", help="writes NAME.yaml, titled after it")
    p.add_argument("--dir", type=Path, default=Path("."), help="directory to write to (default: current)")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    path = new_scenario(args.stem, args.protocol, args.dir)
    print(terminal_safe(f"wrote {path}\n  check: moot validate {path}\n  try:   moot run {path} --model scripted"))
    return 0
