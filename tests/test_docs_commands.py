"""Docs and command line agree: every `moot ...` line in the README's and docs/'s code blocks names
a command that exists (or a scenario, experiment or file `moot run` takes) and only options that
command has. The options are read from each command's own --help. The lines (and --help examples)
that call no real model run, from a copy with nothing beside it: they work or say where to fetch."""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
import shutil
from pathlib import Path
from typing import Optional

import pytest

from moot.cli import COMMANDS, main, protocol_commands
from moot.scenario.bundled import bundled_names, experiments_dir

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"(?ms)^```[a-z]*\n(.*?)^```")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def command_lines() -> list[tuple[str, str]]:
    """(where, the command) for every line of a code block that runs moot (also after a pipe)."""
    found = []
    for doc in DOCS:
        for block in FENCE.findall(doc.read_text(encoding="utf-8")):
            for line in block.splitlines():
                code = re.split(r"\s#\s", line)[0]
                for match in re.finditer(r"(?:^|\|\s*)(moot\s.*?)(?=\s*\||$)", code):
                    found.append((doc.name, match.group(1).strip()))
    return found




def command_of(words: list[str]) -> str:
    """The command a line runs: a command's name, else `run` (moot SCENARIO is short for it)."""
    first = words[1] if len(words) > 1 else ""
    if first in COMMANDS or first in protocol_commands():
        return first
    experiments = {p.stem for p in experiments_dir().glob("*.yaml")}
    assert (first.isupper() or first in bundled_names() or first in experiments or first.endswith(".yaml")
            or first.startswith("-")), f"not a command, scenario or file: {first}"
    return "run"


LINES = command_lines()


def test_the_docs_show_commands() -> None:
    assert len(LINES) > 40 and {"README.md", "experiments.md", "protocols.md"} <= {where for where, _ in LINES}


@pytest.mark.parametrize("where, line", LINES, ids=[f"{w}:{line[:60]}" for w, line in LINES])
def test_a_documented_command_has_every_option_it_shows(where: str, line: str, capsys) -> None:
    words = shlex.split(line.replace("'", "").replace('"', ""))
    command = command_of(words)
    with pytest.raises(SystemExit):
        main([command, "--help"])
    shown = capsys.readouterr().out
    missing = [o for o in OPTION.findall(line) if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", shown)]
    assert not missing, f"{where}: `{line}`: moot {command} has no {', '.join(missing)}"


def parser_of(command: str) -> Optional[argparse.ArgumentParser]:
    """The command's parser: a protocol's command's, or its module's `parser()` (None: it has none)."""
    if command in protocol_commands():
        from moot.cli import dataset_command
        from moot.protocols.registry import REGISTRY

        return dataset_command.parser(REGISTRY.commands()[command])
    module = importlib.import_module(f"moot.cli.{command.replace('-', '_')}")
    return module.parser() if hasattr(module, "parser") else None


CONCRETE = [(w, line) for w, line in LINES if not re.search(r"\[|\.\.\.|\b[A-Z][A-Z_]{2,}\b", line)
            and parser_of(command_of(shlex.split(line))) is not None]


@pytest.mark.parametrize("where, line", CONCRETE, ids=[f"{w}:{line[:60]}" for w, line in CONCRETE])
def test_a_documented_command_parses_as_written(where: str, line: str) -> None:
    """Its words in the order the command takes them (positionals, option values, choices)."""
    words = shlex.split(line)
    command = command_of(words)
    parser = parser_of(command)
    assert parser is not None
    parser.parse_args(words[1:] if command == "run" and words[1] != "run" else words[2:])


def help_lines() -> list[tuple[str, str]]:
    """(where, the command) for every example of a command's --help (`moot COMMAND --help`)."""
    found = []
    for command in [*COMMANDS, *protocol_commands()]:
        epilog = (parser_of(command) or argparse.ArgumentParser()).epilog or ""
        for line in epilog.splitlines():
            if line.strip().startswith("moot "):
                found.append((f"moot {command} --help", re.split(r"\s{2,}", line.strip())[0]))
    return found


def cheap(line: str) -> bool:
    """A line that calls no real model: scripted, a plan, help, a check, or a paper's dataset (its
    file is never in a fresh copy, so it stops at loading it)."""
    return (bool(re.search(r"--model scripted|--plan|--help|--list|^moot (validate|schema|new|convert)\b", line))
            or bool(re.search(r"--dataset datasets/(?!demo-)", line)))


RUNNABLE = [(w, line) for w, line in [*CONCRETE, *help_lines()] if cheap(line)]


def test_the_help_examples_and_the_cheap_lines_are_found() -> None:
    assert len(help_lines()) > 15 and len(RUNNABLE) > 10


@pytest.mark.parametrize("where, line", RUNNABLE, ids=[f"{w}:{line[:60]}" for w, line in RUNNABLE])
def test_a_documented_command_runs_from_a_fresh_copy(where: str, line: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """Run in a copy holding only the dataset specs (no data/, nothing beside it): it works, or it
    says in one line where the file it needs is published."""
    shutil.copytree(ROOT / "datasets", tmp_path / "moot" / "datasets")
    monkeypatch.chdir(tmp_path / "moot")
    try:
        code = main(shlex.split(line)[1:])
    except SystemExit as exc:  # --help
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 0 or (code == 2 and len(err.splitlines()) == 1 and "published at" in err), f"{where}: `{line}`: {err}"
