"""One command line: the top-level help lists every command, each command has its module and help,
and a typo gets a suggestion instead of a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from moot.cli import COMMANDS, main, protocol_commands

CLI = Path(__file__).resolve().parents[1] / "moot" / "cli"


def help_text(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_top_level_help_lists_every_command_with_its_description(capsys):
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    listed = text.split("commands:\n")[1].split("\n\n")[0]
    names = [line.split()[0] for line in listed.splitlines()]
    assert names == list(COMMANDS)
    assert all(len(line.split()) > 2 for line in listed.splitlines())  # each with its description
    modules = {p.stem.replace("_", "-") for p in CLI.glob("*.py")} - {"--init--", "options", "show"}
    assert set(COMMANDS) <= modules


def test_top_level_help_lists_the_protocols_commands_apart(capsys):
    assert main(["--help"]) == 0
    listed = capsys.readouterr().out.split("commands of the protocols:\n")[1].split("\n\n")[0]
    assert [line.split()[0] for line in listed.splitlines()] == list(protocol_commands()) == ["judge-eval"]
    assert all(len(line.split()) > 2 for line in listed.splitlines())


@pytest.mark.parametrize("command", [*COMMANDS, *protocol_commands()])
def test_every_command_has_help(capsys, command):
    assert f"moot {command}" in help_text(capsys, command)


def test_run_help_names_the_options_of_every_kind_of_run(capsys):
    text = help_text(capsys, "run")
    for option in ("--input", "--dataset", "--limit", "--vary", "--concurrency", "--resume", "--out", "--model",
                   "--allow-model-change", "--no-cache", "--base-url"):
        assert option in text, option


def test_a_misspelled_command_gets_one_line_with_the_nearest(capsys):
    assert main(["rpelay", "x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "did you mean 'replay'?" in err


def test_the_scenario_shorthand_is_the_run_command(tmp_path, capsys):
    root = Path(__file__).resolve().parents[1]
    for argv in ([str(root / "scenarios" / "cola.yaml")], ["cola"], ["run", "cola"]):
        assert main([*argv, "--model", "scripted", "--out", str(tmp_path / "x"), "--quiet"]) == 0
        assert capsys.readouterr().out.splitlines()[-1].startswith(f"run: {tmp_path / 'x'} items=1")
