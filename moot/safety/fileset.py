"""A set of files written as one: a report folder is never a mix of two reports.

`file_set(out, owned)` gives a fresh folder beside `out` to write the whole set into; when the
block ends without error the fresh folder takes `out`'s place at once (Linux: one atomic exchange,
renameat2 RENAME_EXCHANGE; elsewhere two renames, between which `out` is briefly absent but never
mixed) and the set it replaces is deleted. A block that fails, or a process killed inside it,
leaves `out` as it was: the fresh folder is removed on failure, and one a killed process left is
removed by the next `file_set` beside it.

A folder is replaced only when everything in it is something the set owns (`owned(name)` for each
top-level name: a report's files), so pointing `out` at a folder of other files is refused with
one line instead of deleting them.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from moot.safety.diskio import fresh_folder, named
from moot.safety.places import OutError, usable_out

MAX_STEM = 64
STAGING = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)-[0-9a-f]{16}\.(?:new|old)$")


@contextmanager
def file_set(out: str | Path, owned: Callable[[str], bool], kind: str = "report") -> Iterator[Path]:
    """Write the set into the yielded folder; it becomes `out` when the block ends (see above).
    `kind`: what the set is, as its lines say ("report": "a report folder", "a report's")."""
    out = usable_out(Path(out), "folder", f"a {kind} folder")
    if out.is_symlink():  # a link to a folder: the set goes where it points
        out = Path(os.path.realpath(out))
    check_replaceable(out, owned, kind)
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned(out)
    try:
        staging = fresh_folder(out.parent, f"{stem(out)}.{os.getpid()}-", ".new")
    except OSError as exc:
        raise named(exc, out.parent) from None
    try:
        yield staging
        swap_in(staging, out)
    except OSError as exc:  # named where it was to be: its file in `out`, or `out` (a writer that does not say)
        if exc.errno is not None and (not exc.filename or str(exc.filename).startswith(str(staging))):
            where = out / os.path.relpath(exc.filename, staging) if exc.filename else out
            raise OSError(exc.errno, os.strerror(exc.errno), str(where)) from None
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # the new set if it failed, the old one if it went in


def check_replaceable(out: Path, owned: Callable[[str], bool], kind: str) -> None:
    if not out.exists():
        return
    foreign = sorted(name for name in os.listdir(out) if not owned(name))
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise OutError(f"{out}: holds files that are not a {kind}'s ({shown}); choose another --out "
                       f"(an existing {kind} folder is replaced whole)")


def stem(out: Path) -> str:
    """How the names of `out`'s fresh folders begin (short: a long name must still fit)."""
    return f".{out.name[:MAX_STEM]}"


def remove_abandoned(out: Path) -> None:
    """Fresh folders beside `out` that a killed process left (its pid no longer runs)."""
    try:
        siblings = os.listdir(out.parent)
    except OSError:
        return
    for name in siblings:
        found = STAGING.match(name)
        if found and f".{found['name']}" == stem(out) and not alive(int(found["pid"])):
            shutil.rmtree(out.parent / name, ignore_errors=True)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def swap_in(staging: Path, out: Path) -> None:
    """`staging` becomes `out`; what was `out` ends in `staging` (deleted by the caller)."""
    try:
        if not os.path.lexists(out):
            os.rename(staging, out)
        elif not exchange(staging, out):
            old = fresh_folder(out.parent, f"{stem(out)}.{os.getpid()}-", ".old")
            os.rmdir(old)
            os.rename(out, old)
            os.rename(staging, out)
            os.rename(old, staging)
    except OSError as exc:
        raise named(exc, out) from None


def exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where that is unavailable."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))
