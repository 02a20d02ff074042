"""`schema [--docs] [--out PATH]`: the JSON Schema (draft 2020-12) of the scenario format, or its docs.

One schema for every registered protocol (a oneOf on `protocol`), generated from their pydantic
models, so one `$schema` line serves every scenario file: editors use it for completion and
checking as you type. docs/scenario.schema.json is this output, committed; `--docs` prints
docs/scenarios.md instead (moot.contract.docs). Tests keep both committed files equal to these.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from moot.api.schema import schema_text, write_schema
from moot.cli.options import Parser, summary
from moot.safety.neutral import terminal_safe


def run(argv: Sequence[str]) -> int:
    p = Parser(prog="moot schema", description=summary(__doc__))
    p.add_argument("--docs", action="store_true", help="the Markdown key reference (docs/scenarios.md) instead")
    p.add_argument("--out", type=Path, help="write to this file instead of standard output")
    args = p.parse_args(argv)
    if args.out:
        write_schema(args.out, args.docs)
        print(terminal_safe(f"wrote {args.out}"))
    else:
        sys.stdout.write(schema_text(args.docs))
    return 0
