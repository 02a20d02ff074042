"""Where output goes (`--out`): an odd place is one clear line before anything is written.

A dangling symlink, a symlink loop, a file where a folder is meant (or a folder where a file is),
a device, pipe or socket where a file is meant (`/dev/null`: a file is written beside it and
renamed over it), a path through a file or a dangling symlink are the user's to fix: `OutError`, one line, exit 2.
A folder without write permission, a read-only mount or a name too long for the file system is
the environment refusing: the OSError the first write raises, named (moot.safety.diskio), exit 3.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from moot.errors import MootError

KINDS = ("folder", "file")


class OutError(MootError, ValueError):
    """An output path that cannot be used as one (see the module docstring); one line."""


def usable_out(path: Path, kind: str, what: str = "") -> Path:
    """`path` checked as a `kind` ("folder" or "file") to write: returned as given, or raises
    OutError saying what is wrong with it (and, given `what`, what --out names: "a run folder").
    A symlink to a place of the right kind is fine."""
    assert kind in KINDS, kind
    path = Path(path)
    problem = odd(path, kind)
    if problem:
        names = f" (--out names {what})" if what else ""
        raise OutError(f"{path}: {problem}{names}; choose another --out")
    return path


def odd(path: Path, kind: str) -> str:
    """What makes `path` unusable as an output `kind`, or ""."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop"
        if exc.errno == errno.ENOTDIR:
            return f"{nearest_existing(path)} is a file, not a folder"
        if exc.errno != errno.ENOENT:
            return ""  # permission and the like: the write says so, as the environment's refusal
        if os.path.islink(path):
            return f"a symlink to {os.readlink(path)}, which does not exist"
        return parent_problem(path)
    is_dir = (st.st_mode & 0o170000) == 0o040000
    if kind == "folder" and not is_dir:
        return "exists and is not a folder"
    if kind == "file" and is_dir:
        return "is a folder, not a file"
    if kind == "file" and special(path):
        return "is a device, pipe or socket, not a file (writing would replace it)"
    return ""


def special(path: Path) -> bool:
    """Whether `path` itself (not what a symlink leads to: a symlink is replaced) is a device, a
    pipe or a socket, which a file written beside and renamed over it would replace."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def parent_problem(path: Path) -> str:
    """What stops the folders above a missing `path` from being made, or ""."""
    above = nearest_existing(path)
    if above is None:
        return ""
    if os.path.islink(above) and not os.path.exists(above):
        return f"{above} is a symlink to {os.readlink(above)}, which does not exist"
    if os.path.exists(above) and not os.path.isdir(above):
        return f"{above} is a file, not a folder"
    return ""


def nearest_existing(path: Path) -> Path | None:
    """The closest of `path`'s parents that is there (a dangling symlink counts)."""
    for parent in Path(path).parents:
        if os.path.lexists(parent):
            return parent
    return None
