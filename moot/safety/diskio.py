"""The environment refusing (a full or read-only disk, no permission, a file-size or open-files
limit, no memory) is not the run's fault: one line naming the file and what to do, exit code 3,
nothing half-written, and the same command continues once the refusal is lifted.

`ENVIRONMENT_ERRNOS` names those errors, each with what to do; `is_environment_error` also counts
a MemoryError; `named` gives an OSError the file it concerns (a failed write to an open file does
not say which); `write_atomic` replaces a file whole or not at all; `open_regular` opens a file to
read only if it is a regular one (a FIFO named like a moot file would block every reader).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import resource
import secrets
import sys
import traceback
from pathlib import Path
from typing import Any, BinaryIO, Optional

from moot.safety.places import special

FREE_SPACE, PERMISSIONS = "free space", "fix the permissions"
# errno -> (what happened, what to do about it)
ENVIRONMENT_ERRNOS = {
    errno.ENOSPC: ("the disk is full", FREE_SPACE),
    errno.EDQUOT: ("the disk quota is exceeded", FREE_SPACE),
    errno.EFBIG: ("the file-size limit is reached", "raise the limit (ulimit -f)"),
    errno.EROFS: ("the file system is read-only", "make it writable, or write elsewhere"),  # no option named: not every command has --out
    errno.EACCES: ("permission denied", PERMISSIONS),
    errno.EPERM: ("operation not permitted", PERMISSIONS),
    errno.EIO: ("the disk reported an I/O error", "check the disk"),
    errno.EMFILE: ("this process may open no more files", "raise the limit (ulimit -n)"),
    errno.ENFILE: ("the system may open no more files", "close other programs"),
    errno.ENAMETOOLONG: ("the name is too long for the file system", "choose a shorter path"),
    errno.ENOMEM: ("out of memory", "free memory or lower --concurrency"),
    errno.ESTALE: ("the network file system lost the file", "remount it"),
}
OUT_OF_MEMORY = "out of memory; free memory or lower --concurrency, then run the same command again"
MEMORY_WORDS = ("failed to map segment", "Cannot allocate memory")  # the dynamic loader's, strerror(ENOMEM)


def is_environment_error(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or (isinstance(exc, OSError) and exc.errno in ENVIRONMENT_ERRNOS)


def environment_message(exc: BaseException) -> str:
    """`FILE: the disk is full (No space left on device); free space, then run the same command again`."""
    if isinstance(exc, MemoryError):
        return OUT_OF_MEMORY
    assert isinstance(exc, OSError) and exc.errno is not None
    where = f"{exc.filename}: " if exc.filename else ""
    what, todo = ENVIRONMENT_ERRNOS[exc.errno]
    if exc.errno == errno.EFBIG:
        what = what.replace("limit", f"limit{size_limit()}", 1)
    return f"{where}{what} ({os.strerror(exc.errno)}); {todo}, then run the same command again"


def out_of_memory(exc: Optional[BaseException]) -> bool:
    """Did `exc` come of memory running out (a MemoryError in its chain, or a shared library that
    could not be mapped into memory)?"""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, MemoryError) or any(words in str(exc) for words in MEMORY_WORDS):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def report_unraisable(report: Any) -> None:
    """`sys.unraisablehook` of a moot process. A finalizer that failed for want of memory says
    nothing: moot's one line about memory follows and says what to do. Anything else is reported
    as Python would, built whole before it is written, so that running out of memory while
    reporting writes nothing rather than half a report (Python's own hook, failing, prints
    "Exception ignored in sys.unraisablehook" in front of moot's line)."""
    try:
        if out_of_memory(report.exc_value):
            return
        where = f"{report.err_msg or 'Exception ignored in'}: {report.object!r}\n" if report.object is not None \
            else f"{report.err_msg or 'Exception ignored'}:\n"
        text = where + "".join(traceback.format_exception(report.exc_type, report.exc_value, report.exc_traceback))
        sys.stderr.write(text)
    except MemoryError:
        pass


def size_limit() -> str:
    """` (N bytes)`: this process's file-size limit, when it has one."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return f" ({soft} bytes)" if soft != resource.RLIM_INFINITY else ""


def named(exc: OSError, path: str | Path) -> OSError:
    """`exc` with `path` as its file name (when it has none), to be raised in its place."""
    if exc.filename or exc.errno is None:
        return exc
    return OSError(exc.errno, os.strerror(exc.errno), str(path))


def open_regular(path: str | Path) -> BinaryIO:
    """`path` opened to read in binary, or an OSError (EINVAL) when it is not a regular file: a
    FIFO, a socket or a device is opened without blocking (O_NONBLOCK), looked at, and closed."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, a socket or a device): not read", str(path))
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | Path) -> str:
    """A regular file's text (UTF-8; see `open_regular`)."""
    with open_regular(path) as f:
        return f.read().decode("utf-8")


def write_atomic(path: str | Path, data: str | bytes, replace: bool = True) -> None:
    """Write `data` to `path` through a temporary file renamed over it: a full or read-only disk
    leaves the old file (or none), never half of the new one. The temporary file is one no other
    process can have prepared (see `create_exclusive`); a symlink at `path` is replaced, never
    written through. `replace=False`: fail with FileExistsError if `path` exists (even as a
    dangling symlink) rather than replace it."""
    path = Path(path)
    if special(path):  # never renamed over /dev/null or a pipe: callers check with usable_out
        raise FileExistsError(errno.EEXIST, "a device, pipe or socket, not a file; not replaced", str(path))
    tmp = None
    try:
        fd, tmp = create_exclusive(path.parent, f".{path.name[:64]}.", ".tmp")  # short: a long name still fits
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path, follow_symlinks=False)  # fails if anything is there, atomically
    except OSError as exc:
        if exc.errno is None or isinstance(exc, FileExistsError):
            raise
        raise OSError(exc.errno, os.strerror(exc.errno), str(path)) from None  # the file, not its temporary
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
