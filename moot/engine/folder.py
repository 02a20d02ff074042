"""A run folder: what ran, its results, one transcript per unit, the reply cache, a lock.

    RUN/run.json         what was run (identity: protocol, scenario and dataset hashes, models)
    RUN/results.jsonl    one line per finished unit, appended as it finishes
    RUN/UNIT.jsonl       one transcript per unit (a conference, or one item)
    RUN/UNIT.live.json   the turn being generated, while one is (moot.engine.live)
    RUN/cache.sqlite     model replies: a rerun or a resume never sends a finished call twice
    RUN/run.lock         held by the process running it (released when that process ends)

Results are read as strictly and as bounded as transcripts (moot.log.jsonl): a blank line is
harmless, a torn last line (a killed writer) is left out and set aside before the next append, and
a garbled, overlong or duplicated row is an error naming its line — never silently skipped. run.json
is refused unread when it is larger than any run.json moot writes.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

from moot.safety.diskio import named, read_regular, write_atomic
from moot.safety.places import usable_out
from moot.log.jsonl import MAX_LINE, JsonLines, set_aside_torn_tail
from moot.engine.records import ResultRow, RunMeta, Shape, problem
from moot.errors import MootError

Record = dict[str, Any]  # a JSON object moot wrote (run.json, a results row), read back as written

RESERVED = {"run", "results", "cache"}


class RunFolderError(MootError, ValueError):
    """A run folder that cannot be used: another run's, locked, or unreadable; one line."""


def unit_file(unit_id: str) -> str:
    """A transcript file name for a unit id: safe characters, unique (a hash when changed)."""
    safe = re.sub(r"[^A-Za-z0-9._+=-]", "_", unit_id)[:80].lstrip(".") or "unit"
    if safe != unit_id or safe in RESERVED:
        safe += "-" + hashlib.sha1(unit_id.encode("utf-8")).hexdigest()[:8]
    return safe + ".jsonl"


def live_file(transcript: Path) -> Path:
    """The side file describing the turn in progress of the unit whose transcript this is."""
    return transcript.with_name(transcript.name.removesuffix(".jsonl") + ".live.json")


class RunFolder:
    """Open with `with RunFolder(path) as folder:`; the lock is held until the block ends."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock: Optional[int] = None
        self._results: Optional[Any] = None

    # --- the lock -------------------------------------------------------------------------
    def __enter__(self) -> "RunFolder":
        usable_out(self.path, "folder", "a run folder")
        self.path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path / "run.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise RunFolderError(f"{self.path}: in use by another moot process (pid {holder}); "
                                 "wait for it to finish or choose another --out") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        self._lock = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._results is not None:
            self._results.close()
            self._results = None
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            os.close(self._lock)
            self._lock = None

    # --- paths ----------------------------------------------------------------------------
    @property
    def meta_path(self) -> Path:
        return self.path / "run.json"

    @property
    def results_path(self) -> Path:
        return self.path / "results.jsonl"

    @property
    def cache_path(self) -> Path:
        return self.path / "cache.sqlite"

    def transcript_path(self, unit_id: str) -> Path:
        return self.path / unit_file(unit_id)

    # --- run.json -------------------------------------------------------------------------
    def meta(self) -> Optional[Record]:
        return read_meta(self.path)

    def write_meta(self, meta: Record) -> None:
        """Replace run.json atomically (write a temporary file, then rename)."""
        write_atomic(self.meta_path, json.dumps(meta, indent=2, ensure_ascii=False) + "\n")

    # --- results.jsonl --------------------------------------------------------------------
    def results(self) -> dict[str, Record]:
        return read_results(self.path)

    def append_result(self, row: Record) -> None:
        try:
            if self._results is None:
                set_aside_torn_tail(self.results_path, RunFolderError)
                self._results = open(self.results_path, "a", encoding="utf-8")
            self._results.write(json.dumps(row, ensure_ascii=False) + "\n")
            self._results.flush()
        except OSError as exc:
            raise named(exc, self.results_path) from None


def read_meta(path: Path) -> Optional[Record]:
    return read_object(Path(path) / "run.json", "run.json", RunMeta)


def read_object(file: Path, what: str, shape: type[Shape]) -> Optional[Record]:
    """A JSON object file of `shape` (moot.engine.records; None when absent); one line naming it
    (and the key) when it is unreadable or not of its shape."""
    if not file.exists():
        return None
    try:
        big = file.stat().st_size > MAX_LINE
        data = None if big else json.loads(read_regular(file))
    except OSError as exc:
        raise RunFolderError(f"{file}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:
        raise RunFolderError(f"{file}: unreadable {what} ({exc})") from None
    if big:
        raise RunFolderError(f"{file}: larger than {MAX_LINE // 2**20} MiB: not a {what} moot wrote")
    if not isinstance(data, dict):
        raise RunFolderError(f"{file}: {what} must be a JSON object")
    wrong = problem(data, shape)
    if wrong is not None:
        raise RunFolderError(f"{file}: {wrong}: not a {what} as moot writes it")
    return data


def iter_results(path: Path) -> Iterator[tuple[int, Record]]:
    """(line, row) of a results.jsonl, strictly (see the module docstring)."""
    results = Path(path) / "results.jsonl"
    if not results.exists():
        return
    for number, row in JsonLines(results, RunFolderError, "result row", "a results file"):
        wrong = problem(row, ResultRow)
        if wrong is not None:
            raise RunFolderError(f"{results}:{number}: {wrong}: not a result row as moot writes it")
        yield number, row


def read_results(path: Path) -> dict[str, Record]:
    """Finished units by id; a unit recorded twice is an error naming the second line."""
    done: dict[str, Record] = {}
    first: dict[str, int] = {}
    for number, row in iter_results(path):
        if row["id"] in done:
            raise RunFolderError(f"{Path(path) / 'results.jsonl'}:{number}: unit {row['id']!r} "
                                 f"recorded twice (also line {first[row['id']]})")
        done[row["id"]], first[row["id"]] = row, number
    return done


def transcript_of(folder: Path, row: Record) -> Path:
    """A result row's transcript, inside its run folder: the path the row names relative to the
    folder, or (older runs named it relative to where moot ran) the file of its name in the folder
    or its transcripts/. A run folder's rows are data, not paths to follow: one that names a file
    outside the folder (`..`, an absolute path, a link that leads out) is refused in one line."""
    given = Path(str(row.get("transcript", "")))
    found = next((c for c in (Path(folder) / given, Path(folder) / given.name, Path(folder) / "transcripts" / given.name)
                  if c.is_file()), Path(folder) / given)
    if not found.resolve().is_relative_to(Path(folder).resolve()):
        raise RunFolderError(f"{Path(folder) / 'results.jsonl'}: unit {row.get('id')!r} names a transcript outside "
                             f"its run folder ({str(given)[:200]!r}): not read")
    return found


# ---------------------------------------------------------------------------------------------- who runs it
LockKey = tuple[int, int, int]  # (device major, minor, inode)
_LOCK_LINE = re.compile(r"^\d+:\s+FLOCK\s+\S+\s+WRITE\s+(\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s", re.M)


def held_locks() -> dict[LockKey, int]:
    """Exclusive flock()s held on this machine, by file, with the pid holding each (Linux's
    /proc/locks; elsewhere empty, and `lock_holder` falls back on the pid a run.lock names)."""
    try:
        text = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return {}
    return {(int(major, 16), int(minor, 16), int(inode)): int(pid)
            for pid, major, minor, inode in _LOCK_LINE.findall(text)}


def lock_holder(lock: Path, locks: Mapping[LockKey, int]) -> Optional[int]:
    """The pid running the run folder whose lock file this is, or None. Only looked at, never
    locked: taking even a shared lock could make a starting run think the folder busy."""
    try:
        info = os.stat(lock)
    except OSError:
        return None
    if locks or Path("/proc/locks").exists():
        return locks.get((os.major(info.st_dev), os.minor(info.st_dev), info.st_ino))
    try:
        pid = int(lock.read_text(encoding="ascii").strip() or "0")
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def holder_of(folder: Path) -> Optional[int]:
    """The pid of the moot process running the run folder now (holding its lock), or None."""
    return lock_holder(Path(folder) / "run.lock", held_locks())

