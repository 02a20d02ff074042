"""The disk refusing a write (full, read-only, no permission) is the environment's fault, not the
run's: one line naming the file and what to do, exit code 3, and nothing half-written.

`ENVIRONMENT_ERRNOS` names those errors; `named` gives an OSError the file it concerns (a failed
write to an open file does not say which); `write_atomic` replaces a file whole or not at all.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

ENVIRONMENT_ERRNOS = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
                      errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
                      errno.EPERM: "operation not permitted", errno.EIO: "the disk reported an I/O error"}


def is_environment_error(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in ENVIRONMENT_ERRNOS


def environment_message(exc: OSError) -> str:
    """`FILE: the disk is full (No space left on device); free space or fix permissions, then ...`."""
    where = f"{exc.filename}: " if exc.filename else ""
    return (f"{where}{ENVIRONMENT_ERRNOS[exc.errno]} ({os.strerror(exc.errno)}); "
            "free space or fix permissions, then run the same command again")


def named(exc: OSError, path: str | Path) -> OSError:
    """`exc` with `path` as its file name (when it has none), to be raised in its place."""
    if exc.filename or exc.errno is None:
        return exc
    return OSError(exc.errno, os.strerror(exc.errno), str(path))


def write_atomic(path: str | Path, text: str) -> None:
    """Write `text` to `path` through a temporary file renamed over it: a full or read-only disk
    leaves the old file (or none), never half of the new one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise named(exc, path) from None
