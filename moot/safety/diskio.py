"""The disk refusing a write (full, read-only, no permission) is the environment's fault, not the
run's: one line naming the file and what to do, exit code 3, and nothing half-written.

`ENVIRONMENT_ERRNOS` names those errors; `named` gives an OSError the file it concerns (a failed
write to an open file does not say which); `write_atomic` replaces a file whole or not at all.
"""

from __future__ import annotations

import errno
import os
import secrets
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


def write_atomic(path: str | Path, data: str | bytes, replace: bool = True) -> None:
    """Write `data` to `path` through a temporary file renamed over it: a full or read-only disk
    leaves the old file (or none), never half of the new one. The temporary file is one no other
    process can have prepared (see `create_exclusive`); a symlink at `path` is replaced, never
    written through. `replace=False`: fail with FileExistsError if `path` exists (even as a
    dangling symlink) rather than replace it."""
    path = Path(path)
    tmp = None
    try:
        fd, tmp = create_exclusive(path.parent, f".{path.name}.", ".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path, follow_symlinks=False)  # fails if anything is there, atomically
    except OSError as exc:
        raise named(exc, path) from None
    finally:
        if tmp is not None and os.path.lexists(tmp):
            try:
                os.unlink(tmp)
            except OSError:
                pass


def create_exclusive(folder: str | Path, prefix: str, suffix: str) -> tuple[int, Path]:
    """A new file in `folder` under a name no one can predict, opened for writing: created by this
    call (O_EXCL: a file or symlink someone planted under that name makes it pick another name),
    never through a symlink (O_NOFOLLOW), with the permissions the umask allows."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        path = Path(folder) / f"{prefix}{secrets.token_hex(8)}{suffix}"
        try:
            return os.open(path, flags, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder))


def fresh_folder(parent: str | Path, prefix: str, suffix: str) -> Path:
    """A new, empty folder in `parent` under a name no one can predict, made by this call."""
    for _ in range(100):
        path = Path(parent) / f"{prefix}{secrets.token_hex(8)}{suffix}"
        try:
            os.mkdir(path, 0o777)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(parent))
