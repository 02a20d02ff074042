"""A run folder: what ran, its results, one transcript per unit, the reply cache, a lock.

    RUN/run.json         what was run (identity: protocol, scenario and dataset hashes, models)
    RUN/results.jsonl    one line per finished unit, appended as it finishes
    RUN/UNIT.jsonl       one transcript per unit (a conference, or one item)
    RUN/UNIT.live.json   the turn being generated, while one is (moot.engine.live)
    RUN/cache.sqlite     model replies: a rerun or a resume never sends a finished call twice
    RUN/run.lock         held by the process running it (released when that process ends)

They are read back, checked, by moot.saved.files; here they are written: a torn last line of
results.jsonl (a killed writer) is set aside before the next append.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Mapping, Optional

from moot.safety.diskio import named, write_atomic
from moot.safety.places import usable_out
from moot.log.jsonl import set_aside_torn_tail
from moot.saved.files import Record, RunFolderError, read_meta, read_record, read_results
from moot.saved.records import RunMeta

RESERVED = {"run", "results", "cache"}


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

    def record(self) -> RunMeta:
        """Its run.json, typed (empty when it has none)."""
        return read_record(self.path) or RunMeta()

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

