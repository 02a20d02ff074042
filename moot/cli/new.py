"""`new --protocol conference|cola|s2mad|negotiation NAME [--dir DIR]`: a commented scenario.

The file is valid as written (`validate` passes, `--model scripted` runs it; a per-item protocol
on the item given under `input:`), so a new user edits a working scenario instead of
assembling one from the docs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from moot.commands.new_templates import TEMPLATES

PROTOCOLS = tuple(TEMPLATES)  # conference, cola, s2mad, negotiation
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "scenario.schema.json"

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="moot new", description=__doc__.splitlines()[0])
    p.add_argument("--protocol", choices=PROTOCOLS, default="conference", help="protocol (default conference)")
    p.add_argument("name", help="scenario name: writes NAME.yaml")
    p.add_argument("--dir", type=Path, default=Path("."), help="directory to write to (default: current)")
    return p


def scenario_text(name: str, path: Path, protocol: str = "conference") -> str:
    """The template filled in for `name`; it points editors at the schema when that can be found."""
    title = json.dumps(name.replace("_", " ").replace("-", " ").strip().capitalize() or name)
    text = TEMPLATES[protocol].format(file=path.as_posix(), title=title)
    schema = _schema_ref(path.parent)
    return f"# yaml-language-server: $schema={schema}\n{text}" if schema else text


def _schema_ref(directory: Path) -> Optional[str]:
    """Relative inside the moot checkout (portable with it), else a file URI; None if not shipped."""
    if not SCHEMA_FILE.is_file():
        return None
    directory = directory.resolve()
    if directory.is_relative_to(SCHEMA_FILE.parents[1]):
        return Path(os.path.relpath(SCHEMA_FILE, directory)).as_posix()
    return SCHEMA_FILE.as_uri()


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    stem = args.name.removesuffix(".yaml")
    if not stem or Path(stem).name != stem or stem.startswith("."):
        print(f"error: NAME must be a plain file name, got {args.name!r}", file=sys.stderr)
        return 2
    path = args.dir / f"{stem}.yaml"
    if path.exists():
        print(f"error: {path} exists; choose another NAME or --dir", file=sys.stderr)
        return 2
    args.dir.mkdir(parents=True, exist_ok=True)
    path.write_text(scenario_text(stem, path, args.protocol), encoding="utf-8")
    print(f"wrote {path}\n  check: python run_conference.py validate {path}\n"
          f"  try:   python run_conference.py {path} --model scripted")
    return 0
