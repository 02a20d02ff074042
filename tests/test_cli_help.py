"""The top-level help names the per-item options and every subcommand, one line each."""

from __future__ import annotations

from pathlib import Path

import pytest

from moot.cli import SUBCOMMANDS, main

COMMANDS = Path(__file__).resolve().parents[1] / "moot" / "commands"


def help_text(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_top_level_help_lists_per_item_options_and_subcommands(capsys):
    text = help_text(capsys)
    for option in ("--input", "--dataset", "--limit", "--concurrency", "--resume", "--cache"):
        assert option in text, option
    listed = text.split("subcommands (run_conference.py NAME --help for each):\n")[1].split("\n\n")[0]
    names = [line.split()[0] for line in listed.splitlines()]
    assert names == list(SUBCOMMANDS)
    assert all(len(line.split()) > 2 for line in listed.splitlines())  # each with its description
    modules = {p.stem.replace("_", "-") for p in COMMANDS.glob("*.py")} - {"--init--", "new-templates"}
    assert set(SUBCOMMANDS) == modules


def test_a_protocol_scenario_shows_its_own_options(capsys):
    root = Path(__file__).resolve().parents[1]
    text = help_text(capsys, str(root / "scenarios" / "cola.yaml"))
    assert "--dataset DATA.yaml" in text and "--concurrency" in text
