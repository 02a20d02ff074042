"""What a run sent through a provider's batch API, kept in its folder so a killed process loses nothing.

    FOLDER/batches/journal.jsonl     one line per step, appended and flushed before the step counts:
                                     `uploaded` (a file of requests, their ids), `submitted` (the batch
                                     made of it), `downloaded`, `rejected`
    FOLDER/batches/BATCH.jsonl       a batch's replies as downloaded, written whole before `downloaded`

A request's id is the hash of what it sends (moot.models.batch.request_id), so the same call asked
again after a restart has the same id: it is answered from a downloaded batch, re-attached to a
batch still running, or (uploaded but never made a batch) looked for among the provider's batches;
only a call found nowhere is sent again. A torn last line (a process killed mid-write) is left out.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

from moot.safety.diskio import named, write_atomic

JOURNAL = "journal.jsonl"
SAFE_ID = re.compile(r"[A-Za-z0-9_.-]{1,120}")


@dataclass(frozen=True)
class LineResult:
    """One request's reply in a batch: its HTTP `status` and `body`, or status 0 (no reply: the
    batch expired or was cancelled first, or the line was missing) with `error` saying why."""

    custom_id: str
    status: int
    body: Any = None
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"custom_id": self.custom_id, "status": self.status, "body": self.body, "error": self.error}


def batch_file(folder: Path, batch_id: str) -> Path:
    """Where a batch's replies are kept (an id that is no safe file name is hashed)."""
    if not SAFE_ID.fullmatch(batch_id) or batch_id.startswith("."):
        import hashlib

        batch_id = hashlib.sha256(batch_id.encode("utf-8")).hexdigest()[:32]
    return folder / f"{batch_id}.jsonl"


def records(path: Path) -> Iterator[dict[str, Any]]:
    """The journal's records; a line that is no JSON object (a torn tail) is left out."""
    if not path.is_file():
        return
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record


class Journal:
    """The batches of one run (or one experiment) folder, read at start, appended as they go."""

    def __init__(self, folder: Path):
        self.folder = Path(folder) / "batches"
        self.answers: dict[str, LineResult] = {}  # successful replies of downloaded batches
        self.batch_of: dict[str, str] = {}  # request id -> the batch (not yet downloaded) holding it
        self.members: dict[str, list[str]] = {}  # batch id -> its request ids
        self.uploaded: dict[str, list[str]] = {}  # file id -> request ids, of files never made a batch
        self.file_of: dict[str, str] = {}  # request id -> its uploaded file (never made a batch)
        for record in records(self.folder / JOURNAL):
            self._apply(record)

    def _apply(self, record: dict[str, Any]) -> None:
        event, ids = record.get("event"), [str(i) for i in record.get("custom_ids") or []]
        batch, file = str(record.get("batch", "")), str(record.get("file", ""))
        if event == "uploaded":
            self.uploaded[file] = ids
            self.file_of.update((i, file) for i in ids)
        elif event == "submitted":
            ids = self.uploaded.pop(file, ids)
            for i in ids:
                self.file_of.pop(i, None)
                self.batch_of[i] = batch
            self.members[batch] = ids
        elif event in ("downloaded", "rejected"):
            for i in self.members.pop(batch, []):
                if self.batch_of.get(i) == batch:
                    del self.batch_of[i]
            if event == "downloaded":
                self._load(batch)

    def _load(self, batch: str) -> None:
        for line in records(batch_file(self.folder, batch)):
            found = LineResult(str(line.get("custom_id", "")), int(line.get("status") or 0), line.get("body"),
                               str(line.get("error") or ""))
            if found.status == 200:
                self.answers[found.custom_id] = found

    def write(self, record: dict[str, Any]) -> None:
        """Append a step (flushed to disk before it counts), then apply it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / JOURNAL
        try:
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise named(exc, path) from None
        self._apply(record)

    def downloaded(self, batch: str, results: list[LineResult]) -> None:
        """A batch's replies kept, then the step recorded."""
        self.folder.mkdir(parents=True, exist_ok=True)
        write_atomic(batch_file(self.folder, batch),
                     "".join(json.dumps(r.as_dict(), ensure_ascii=False) + "\n" for r in results))
        self.write({"event": "downloaded", "batch": batch})

    def unfinished(self, custom_id: str) -> Optional[str]:
        """The batch, submitted and not yet downloaded, that holds this request."""
        return self.batch_of.get(custom_id)
