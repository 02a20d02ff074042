"""Torture: odd output places (`--out`).

A dangling or looping symlink, a file where a folder is meant (or the reverse), a pipe or device
where a file is meant (never replaced), a path through a file or a dangling symlink: one line naming the path, exit 2, nothing written — for every command
with an --out. A folder without permission, a read-only mount and a name too long for the file
system are the environment refusing: one line naming the place, exit 3, nothing written.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from test_torture_files import SECRET_TEXT, runs  # noqa: F401 - runs: a fixture
from torture_support import (  # noqa: F401 - tmpfs: a fixture
    assert_clean, case, drop_root_powers, files_of, moot, moot_process, require_root, tmpfs, write,
)


def oddity(tmp_path: Path, kind: str, odd: str) -> tuple[Path, str]:
    """An odd --out for a `kind` ("folder" or "file") output: (the path, what the line says)."""
    if odd == "dangling symlink":
        os.symlink(tmp_path / "gone", tmp_path / "link")
        return tmp_path / "link", f"a symlink to {tmp_path / 'gone'}, which does not exist"
    if odd == "symlink loop":
        os.symlink(tmp_path / "loop-b", tmp_path / "loop-a")
        os.symlink(tmp_path / "loop-a", tmp_path / "loop-b")
        return tmp_path / "loop-a", "a symlink loop"
    if odd == "the other kind":
        if kind == "folder":
            return write(tmp_path / "a-file", SECRET_TEXT), "exists and is not a folder"
        (tmp_path / "a-folder").mkdir()
        return tmp_path / "a-folder", "is a folder, not a file"
    if odd == "through a file":
        write(tmp_path / "a-file", SECRET_TEXT)
        return tmp_path / "a-file" / "sub" / "out", f"{tmp_path / 'a-file'} is a file, not a folder"
    if odd == "through a dangling symlink":
        os.symlink(tmp_path / "gone", tmp_path / "link")
        return tmp_path / "link" / "out", (f"{tmp_path / 'link'} is a symlink to {tmp_path / 'gone'}, "
                                           "which does not exist")
    if odd == "a pipe":  # as /dev/null: a file renamed over it would replace it
        os.mkfifo(tmp_path / "pipe")
        return tmp_path / "pipe", ("exists and is not a folder" if kind == "folder"
                                   else "is a device, pipe or socket, not a file")
    raise AssertionError(odd)


ODD = ["dangling symlink", "symlink loop", "the other kind", "through a file", "through a dangling symlink", "a pipe"]
# command -> (the kind of its --out, argv before --out)
COMMANDS = {"run": ("folder", lambda runs: [runs / "cola.yaml", "--dataset", runs / "data.yaml", "--quiet",
                                            "--model", "scripted"]),
            "report": ("folder", lambda runs: ["report", runs / "one"]),
            "export": ("file", lambda runs: ["export", runs / "one"]),
            "schema": ("file", lambda runs: ["schema"])}


@pytest.mark.parametrize("odd", ODD)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_odd_out_is_one_clear_line_and_nothing_is_written(command, odd, runs, tmp_path):
    kind, argv = COMMANDS[command]
    out, says = oddity(tmp_path, kind, odd)
    before = {p: p.read_bytes() for p in files_of(tmp_path)}
    with case("bad inputs", "out"):
        ran = moot(*argv(runs), "--out", out)
        assert ran.code == 2, (ran.out, ran.err)
        assert len(ran.err_lines) == 1, ran.err
        line = ran.err_lines[0]
        assert line.startswith(f"error: {out}: {says}") and "choose another --out" in line, line
        assert_clean(ran)
        assert {p: p.read_bytes() for p in files_of(tmp_path)} == before
        assert not (tmp_path / "gone").exists()
        assert odd != "a pipe" or (tmp_path / "pipe").is_fifo()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_out_on_a_read_only_disk_is_one_line_exit_3(command, runs, tmpfs):
    disk, remount = tmpfs
    kind, argv = COMMANDS[command]
    remount("ro")
    with case("fault modes", "out"):
        ran = moot(*argv(runs), "--out", disk / "out")
        assert ran.code == 3, (ran.out, ran.err)
        assert len(ran.err_lines) == 1 and ran.err_lines[0].startswith(f"error: {disk}"), ran.err
        assert "read-only" in ran.err_lines[0] and "run the same command again" in ran.err_lines[0]
        assert_clean(ran)
        assert list(disk.iterdir()) == []


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_out_in_a_folder_without_permission_is_one_line_exit_3(command, runs, tmp_path):
    require_root()
    kind, argv = COMMANDS[command]
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    locked.chmod(0o555)
    proc = moot_process(*argv(runs), "--out", locked / "out", preexec_fn=drop_root_powers)
    out, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("this root ignores file permissions even without CAP_DAC_OVERRIDE")
    with case("fault modes", "out"):
        assert proc.returncode == 3, err
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and "permission denied" in lines[0] and str(locked) in lines[0], err
        assert list(locked.iterdir()) == []


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_out_named_too_long_for_the_file_system_is_one_line_exit_3(command, runs, tmp_path):
    kind, argv = COMMANDS[command]
    out = tmp_path / ("x" * 300)
    with case("fault modes", "out"):
        ran = moot(*argv(runs), "--out", out)
        assert ran.code == 3, (ran.out, ran.err)
        assert len(ran.err_lines) == 1 and ran.err_lines[0].startswith(f"error: {tmp_path}"), ran.err
        assert "the name is too long for the file system" in ran.err and "choose a shorter path" in ran.err
        assert_clean(ran)
        assert sorted(p.name for p in tmp_path.iterdir()) == []
