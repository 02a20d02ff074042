"""Reading a run folder's own files: run.json, results.jsonl and a row's transcript, checked.

Results are read as strictly and as bounded as transcripts (moot.log.jsonl): a blank line is
harmless, a torn last line (a killed writer) is left out, and a garbled, overlong or duplicated
row is an error naming its line — never silently skipped. run.json is refused unread when it is
larger than any run.json moot writes. Each file is checked against its shape (moot.saved.records).
The writer of these files (with its lock) is moot.engine.folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator, Optional

from moot.errors import MootError
from moot.log.jsonl import MAX_LINE, JsonLines
from moot.safety.diskio import read_regular
from moot.saved.records import ResultRow, RunMeta, Shape, problem

Record = dict[str, Any]  # a JSON object moot wrote (run.json, a results row), read back as written


class RunFolderError(MootError, ValueError):
    """A run folder that cannot be used: another run's, locked, or unreadable; one line."""


def read_meta(path: Path) -> Optional[Record]:
    return read_object(Path(path) / "run.json", "run.json", RunMeta)


def read_record(path: Path) -> Optional[RunMeta]:
    """A run folder's run.json, typed (None when it has none)."""
    found = read_meta(path)
    return None if found is None else RunMeta.model_validate(found)


def read_object(file: Path, what: str, shape: type[Shape]) -> Optional[Record]:
    """A JSON object file of `shape` (moot.saved.records; None when absent); one line naming it
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


def result_rows(path: Path) -> Iterator[ResultRow]:
    """Its results rows in order, typed (read strictly: iter_results)."""
    return (ResultRow.model_validate(row) for _, row in iter_results(path))


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


def transcript_of(folder: Path, row: ResultRow) -> Path:
    """A result row's transcript, inside its run folder: the path the row names relative to the
    folder, or (older runs named it relative to where moot ran) the file of its name in the folder
    or its transcripts/. A run folder's rows are data, not paths to follow: one that names a file
    outside the folder (`..`, an absolute path, a link that leads out) is refused in one line."""
    given = Path(row.transcript or "")
    found = next((c for c in (Path(folder) / given, Path(folder) / given.name, Path(folder) / "transcripts" / given.name)
                  if c.is_file()), Path(folder) / given)
    if not found.resolve().is_relative_to(Path(folder).resolve()):
        raise RunFolderError(f"{Path(folder) / 'results.jsonl'}: unit {row.id!r} names a transcript outside "
                             f"its run folder ({str(given)[:200]!r}): not read")
    return found
