"""A new scenario, NAME.yaml, from a protocol's bundled example (`moot new`).

The file is the protocol's example scenario (scenarios/<example>.yaml, comments kept) under a new
title, with a `$schema` line for editors. It is valid as written and runs with `--model scripted`
(a per-item protocol on the item under `input:`), so a new user edits a working scenario instead
of assembling one from the docs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

import yaml

from moot.api.options import PathLike
from moot.contract.protocol import Protocol
from moot.errors import UsageError
from moot.protocols.registry import REGISTRY
from moot.safety.diskio import write_atomic
from moot.safety.places import usable_out
from moot.scenario.bundled import bundled_dir
from moot.scenario.load import DEFAULT_PROTOCOL as DEFAULT_PROTOCOL  # the protocol of a scenario without `protocol:`

SCHEMA_LINE = "# yaml-language-server: $schema="
CHECKOUT = Path(__file__).resolve().parents[2]  # the repository, when moot runs from a checkout
SCHEMA_FILE = CHECKOUT / "docs" / "scenario.schema.json"


def scenario_text(protocol: Protocol[Any], stem: str, path: Path) -> str:
    """The protocol's example under the title made from `stem`, pointing editors at the schema."""
    example = (bundled_dir() / f"{protocol.example}.yaml").read_text(encoding="utf-8")
    body = "".join(line for line in example.splitlines(keepends=True) if not line.startswith(SCHEMA_LINE))
    title = json.dumps(stem.replace("_", " ").replace("-", " ").strip().capitalize() or stem)
    schema = schema_ref(path.parent)
    return (f"{SCHEMA_LINE}{schema}\n" if schema else "") + retitle(body, title)


def retitle(text: str, title: str) -> str:
    """The scenario text with its top-level `title:` (however many lines) set to `title`, every
    comment and the rest of the layout kept; a text without a title gets one before its first key."""
    top = yaml.compose(text, Loader=yaml.SafeLoader)
    assert isinstance(top, yaml.MappingNode)  # a bundled scenario: a mapping of keys
    lines = text.splitlines(keepends=True)
    found = [(key, value) for key, value in top.value if key.value == "title"]
    if not found:
        lines.insert(top.value[0][0].start_mark.line, f"title: {title}\n")
        return "".join(lines)
    key, value = found[0]
    end = value.end_mark  # after the value: on its last line, or at column 0 of the next line
    last, rest = (end.line - 1, "\n") if end.column == 0 else (end.line, lines[end.line][end.column:])
    lines[key.start_mark.line:last + 1] = [f"title: {title}{rest}"]
    return "".join(lines)


def schema_ref(directory: Path) -> Optional[str]:
    """The committed schema: relative inside the moot checkout (portable with it), else a file URI;
    None when moot is installed without its docs."""
    if not (SCHEMA_FILE.is_file() and (CHECKOUT / "pyproject.toml").is_file()):
        return None
    directory = directory.resolve()
    if directory.is_relative_to(CHECKOUT):
        return Path(os.path.relpath(SCHEMA_FILE, directory)).as_posix()
    return SCHEMA_FILE.as_uri()


def protocols() -> list[str]:
    """The registered protocols' names: what `protocol:` (and `moot new --protocol`) may be."""
    return REGISTRY.names()


def new_scenario(name: str, protocol: str = DEFAULT_PROTOCOL, directory: PathLike = ".") -> Path:
    """Write DIRECTORY/NAME.yaml (NAME a plain file name; a `.yaml` suffix is dropped), the protocol's
    example under NAME as its title; an existing file is never replaced. Returns its path."""
    stem = name.removesuffix(".yaml")
    if not stem or Path(stem).name != stem or stem.startswith("."):
        raise UsageError(f"NAME must be a plain file name, got {name!r}")
    if protocol not in REGISTRY:
        raise UsageError(f"unknown protocol {protocol!r} (one of {', '.join(protocols())})")
    folder = Path(directory)
    path = folder / f"{stem}.yaml"
    usable_out(folder, "folder")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        write_atomic(path, scenario_text(REGISTRY.get(protocol), stem, path), replace=False)
    except FileExistsError:  # a file, a folder or a symlink by that name: never replaced
        raise UsageError(f"{path} exists; choose another NAME or --dir") from None
    return path
