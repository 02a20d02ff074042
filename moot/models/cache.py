"""A disk cache of model replies keyed by model spec, generation settings, messages and schema.

AutoGen's ChatCompletionCache keys on messages alone (the model name is not part of the key),
so two models asked the same thing would share an answer. Here the key is a sha256 of the spec,
the settings, every message (type, source, content) and the JSON schema of the structured
output requested, and of a request beyond a chat reply (moot.models.requests: its kind and every
parameter) when there is one. Storage is one SQLite file; a reply is written once it succeeded,
with what was measured (a choice's probabilities, a continuation's cut) beside it. A disk that
refuses a write surfaces as the OSError it is (moot.safety.diskio), a damaged file as a CacheError;
a cache another process holds (an experiment's shards share one) is waited for BUSY_WAIT_S, then is
a CacheBusy naming the process, never called damaged; a folder where the file goes is one line.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import resource
import sqlite3
import threading
from contextlib import contextmanager
from functools import lru_cache
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence

from autogen_core.models import LLMMessage
from pydantic import BaseModel
from moot.errors import EXIT_ENVIRONMENT, MootError

BUSY_WAIT_S = 10.0  # how long a cache another process holds is waited for (SQLite's busy timeout)


@dataclass(frozen=True)
class CachedReply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    detail: Optional[dict[str, Any]] = None


def message_data(message: LLMMessage) -> dict[str, Any]:
    """The part of a message that changes a reply: its kind, source and content."""
    return {"type": type(message).__name__, "source": getattr(message, "source", None),
            "content": message.content if isinstance(message.content, str) else repr(message.content)}


@lru_cache(maxsize=256)
def output_schema(output: Optional[type[BaseModel]]) -> Optional[dict[str, Any]]:
    """An output model's JSON schema, computed once per model (pydantic builds it afresh each time)."""
    return output.model_json_schema() if output is not None else None


def cache_key(spec: str, settings: Mapping[str, Any], messages: Sequence[LLMMessage],
              output: Optional[type[BaseModel]] = None, request: Optional[Mapping[str, Any]] = None) -> str:
    """`request`: a request's dict (moot.models.requests); a plain chat call's key has none, so
    keys recorded before requests existed still match."""
    payload = {"spec": spec, "settings": dict(sorted(settings.items())),
               "messages": [message_data(m) for m in messages], "output": output_schema(output)}
    if request is not None:
        payload["request"] = dict(request)
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CacheError(MootError, ValueError):
    """A cache file that is not a reply cache (corrupted, or another file); one line."""


class CacheBusy(MootError):
    """A reply cache another process holds for longer than moot waits; one line naming it."""

    exit_code = EXIT_ENVIRONMENT


@contextmanager
def sqlite_errors(path: Path) -> Iterator[None]:
    """SQLite errors as what they mean: the environment's OSError, a CacheBusy, or a CacheError
    naming the file."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        text = str(exc).lower()
        code = refusal(path, text)
        if code is not None:
            raise OSError(code, os.strerror(code), str(path)) from None
        if "database is locked" in text or "database is busy" in text:
            raise CacheBusy(f"{path}: in use by {holders(path)}, still after {BUSY_WAIT_S:g}s of waiting; run the "
                            "same command again once it has finished (the cache is not damaged)") from None
        raise CacheError(f"{path}: not a usable reply cache ({exc}); delete it to continue "
                         "(finished calls are also in the transcripts)") from None


def holders(path: Path) -> str:
    """Which other processes have the cache file (or its WAL files) open, as `process 123
    (python3)`: read from /proc where there is one (a process's name only: its command line may
    hold a key); else `another process`."""
    wanted = {os.path.realpath(path) + end for end in ("", "-wal", "-shm", "-journal")}
    found = []
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        pid = fd_dir.parent.name
        if pid == str(os.getpid()):
            continue
        try:
            if any(os.readlink(fd) in wanted for fd in fd_dir.iterdir()):
                name = (fd_dir.parent / "comm").read_text(encoding="utf-8", errors="replace").strip()
                found.append(f"process {pid} ({name})")
        except OSError:  # gone, or not ours to see
            continue
    return ", ".join(found) or "another process"


def refusal(path: Path, text: str) -> Optional[int]:
    """The errno behind SQLite's words for the environment refusing, or None (another error).
    SQLite does not pass the errno on: "unable to open" is asked again of the OS, and an I/O error
    is told apart by what can cause it (a read-only file system, this process's file-size limit,
    a full disk), else it is the disk's."""
    if "disk is full" in text:
        return errno.ENOSPC
    if "readonly database" in text:
        return errno.EROFS if read_only(path) else errno.EACCES
    if "unable to open database" in text:
        return opening_refusal(path) or errno.EACCES
    if "disk i/o error" in text:
        return writing_refusal(path)
    return None


def opening_refusal(path: Path) -> Optional[int]:
    """Why the OS refuses to open `path` for writing (EMFILE, EACCES, ...), or None."""
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CLOEXEC | (0 if path.exists() else os.O_CREAT), 0o644))
    except OSError as exc:
        return exc.errno
    return None


def writing_refusal(path: Path) -> int:
    if read_only(path):
        return errno.EROFS
    if resource.getrlimit(resource.RLIMIT_FSIZE)[0] != resource.RLIM_INFINITY:
        return errno.EFBIG
    try:
        if os.statvfs(path.parent).f_bavail == 0:
            return errno.ENOSPC
    except OSError:
        pass
    return errno.EIO


def read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


class ReplyCache:
    """SQLite-backed reply cache, safe to share between the tasks of one event loop."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        if self.path.is_dir():
            raise CacheError(f"{self.path}: a folder where the reply cache file goes; move or rename it")
        with sqlite_errors(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None,
                                       timeout=BUSY_WAIT_S)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL-safe; a lost reply is only re-asked
            self._db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, spec TEXT, "
                             "text TEXT, prompt_tokens INTEGER, completion_tokens INTEGER)")
            self._db.execute("CREATE TABLE IF NOT EXISTS details (key TEXT PRIMARY KEY, detail TEXT)")

    def get(self, key: str) -> Optional[CachedReply]:
        with self._lock, sqlite_errors(self.path):
            row = self._db.execute("SELECT text, prompt_tokens, completion_tokens, detail FROM replies "
                                   "LEFT JOIN details USING (key) WHERE key = ?", (key,)).fetchone()
        return CachedReply(row[0], row[1], row[2], json.loads(row[3]) if row[3] else None) if row else None

    def put(self, key: str, spec: str, reply: CachedReply) -> None:
        with self._lock, sqlite_errors(self.path):
            self._db.execute("BEGIN")  # a reply and its detail are written together
            try:
                self._db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?)",
                                 (key, spec, reply.text, reply.prompt_tokens, reply.completion_tokens))
                if reply.detail:
                    self._db.execute("INSERT OR REPLACE INTO details VALUES (?, ?)",
                                     (key, json.dumps(reply.detail)))
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            count: int = self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
            return count

    def specs(self) -> dict[str, int]:
        """Entries per model spec (tests and `--stats` read this)."""
        with self._lock:
            rows = self._db.execute("SELECT spec, COUNT(*) FROM replies GROUP BY spec").fetchall()
        return dict(rows)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def held(path: Path, keys: Sequence[str]) -> int:
    """How many of `keys` the cache file at `path` holds, read only (no file made; none: 0)."""
    if not keys or not path.is_file():
        return 0
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_WAIT_S)
    try:
        with sqlite_errors(path):
            found = 0
            for start in range(0, len(keys), 500):
                chunk = list(keys[start:start + 500])
                found += db.execute(f"SELECT COUNT(*) FROM replies WHERE key IN ({','.join('?' * len(chunk))})",
                                    chunk).fetchone()[0]
        return found
    finally:
        db.close()


class NoCache:
    """Stands in for ReplyCache when caching is switched off."""

    def get(self, key: str) -> None:
        return None

    def put(self, key: str, spec: str, reply: CachedReply) -> None:
        return None

    def close(self) -> None:
        return None
