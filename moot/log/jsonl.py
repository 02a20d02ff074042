"""Reading moot's JSONL files (transcripts, results.jsonl, annotations) bounded before trusted.

One reader for all of them: the file is read as a stream, one line at a time, so memory does not
grow with the file. Each line is checked before it is decoded: a line longer than MAX_LINE, or
one that does not start like a JSON object, is an error naming the file and line — on the first
line that says the file is not what it should be, at once, without reading on. A blank line is
harmless; a torn last line (no newline, not JSON: its writer was killed mid-write) is left out
and `torn` says so; anything else that does not read is an error naming the file and line.

Appending: `set_aside_torn_tail` moves a torn last line to FILE.torn first, looking back from the
end of the file (never reading it whole), so the next line starts on a fresh line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Optional

from moot.errors import MootError
from moot.safety.diskio import open_regular

MAX_LINE = 8 * 2**20  # bytes of one line: far more than any event moot writes (a call's whole prompt)
_BACK = 2**16  # bytes read at a time when looking back for the last line


class JsonLines:
    """The non-blank lines of `path` as (line number, decoded JSON object), read as a stream.

    `error`: the one-line error class raised (its message names the file and line); `noun`: what
    a line holds ("event"); `kind`: what the file is ("a moot transcript")."""

    def __init__(self, path: Path, error: type[MootError], noun: str, kind: str):
        self.path, self.error, self.noun, self.kind = Path(path), error, noun, kind
        self.torn = False

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        first = True
        for number, line in self._lines():
            problem = ("longer than %d MiB" % (MAX_LINE // 2**20) if len(line) > MAX_LINE
                       else None if line.lstrip().startswith(b"{") else "not a JSON object")
            if problem is not None:
                raise self.error(f"{self.path}:{number}: " + (f"not {self.kind} (its first line is {problem})" if first
                                                              else f"garbled {self.noun}: {problem}"))
            first = False
            yield number, self._decode(number, line)

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        """(number, bytes) of the non-blank lines, read up to MAX_LINE + 1 bytes each (a longer
        one is cut there); a torn last line left out."""
        try:
            with open_regular(self.path) as f:
                for number, line in enumerate(iter(lambda: f.readline(MAX_LINE + 1), b""), 1):
                    if len(line) > MAX_LINE:
                        yield number, line
                    elif not line.strip():
                        continue
                    elif not line.endswith(b"\n") and not is_json(line):
                        self.torn = True  # the last line, cut off mid-write
                        return
                    else:
                        yield number, line
        except OSError as exc:
            raise self.error(f"{self.path}: cannot read: {exc.strerror or exc}") from None

    def _decode(self, number: int, line: bytes) -> dict[str, Any]:
        try:
            found = json.loads(line)
        except ValueError as exc:
            raise self.error(f"{self.path}:{number}: garbled {self.noun}: not JSON ({exc})") from None
        except RecursionError:
            raise self.error(f"{self.path}:{number}: garbled {self.noun}: nested too deeply") from None
        if not isinstance(found, dict):  # `{` then something else, e.g. `{}]`: not JSON either
            raise self.error(f"{self.path}:{number}: garbled {self.noun}: not a JSON object")
        return found


def is_json(line: bytes) -> bool:
    try:
        json.loads(line)
        return True
    except (ValueError, RecursionError):
        return False


def set_aside_torn_tail(path: Path, error: type[MootError]) -> Optional[bytes]:
    """Before appending: a last line without its newline is either complete (add the newline) or
    torn (move it to PATH.torn and cut it off). Returns the torn bytes, if any. A last line longer
    than MAX_LINE is an `error` (the file was not read as a moot file)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size == 0:
        return None
    with open(path, "r+b") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return None
        start = last_line_start(f, size)
        if start is None:
            raise error(f"{path}: its last line is longer than {MAX_LINE // 2**20} MiB; not appending to it")
        f.seek(start)
        tail = f.read()
        if is_json(tail) or not tail.strip():
            f.seek(0, os.SEEK_END)
            f.write(b"\n")
            return None
        with open(path.with_name(path.name + ".torn"), "ab") as aside:
            aside.write(tail + b"\n")
        f.truncate(start)
    return tail


def last_line_start(f: BinaryIO, size: int) -> Optional[int]:
    """Where the last line of a file of `size` bytes starts, looking back at most MAX_LINE bytes
    (None: it is longer)."""
    end = size
    while end > 0 and size - end <= MAX_LINE:
        begin = max(0, end - _BACK)
        f.seek(begin)
        found = f.read(end - begin).rfind(b"\n")
        if found >= 0:
            end = begin + found + 1
            break
        end = begin
    return end if size - end <= MAX_LINE else None
