"""URL paths to files under the served folder: nothing outside it is ever reached.

A path arrives as the raw (percent-encoded) segments of a URL. Each segment is decoded on its own;
a segment that decodes to a separator (`%2F`, `%5C`), to `.` or `..`, to a hidden name, or that
holds a control character is refused, and so is every symbolic link on the way (the folder given
on the command line is resolved once, at start). What is left is a path inside the folder.

Names are bytes on disk: a segment's percent-escapes are decoded to bytes, then to a name as the
file system spells it (os.fsdecode: a byte that is not UTF-8 stays an escaped surrogate), and a
name is quoted from its bytes again (`url_path`), so a folder whose name is not UTF-8 is reached
like any other; `shown` is such a name as a page writes it (`caf\xe9`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath
from urllib.parse import quote, unquote_to_bytes

from moot.errors import MootError


class Refused(MootError, ValueError):
    """A path the viewer does not serve (outside the folder, a link, a hidden or odd name)."""


def segment(raw: str) -> str:
    """One decoded path segment, or Refused."""
    name = os.fsdecode(unquote_to_bytes(raw))
    if not name or name in (".", "..") or name.startswith("."):
        raise Refused(f"refused path segment {raw!r}")
    if any(c in name for c in "/\\") or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise Refused(f"refused path segment {raw!r}")
    return name


class Root:
    """The served folder."""

    def __init__(self, folder: Path):
        self.path = Path(folder).resolve()

    def relative(self, raw: str) -> PurePosixPath:
        """A URL's raw path (`a/b%20c/d`) as a relative path; Refused when any segment is."""
        parts = [segment(s) for s in raw.strip("/").split("/")] if raw.strip("/") else []
        return PurePosixPath(*parts)

    def file(self, rel: PurePosixPath) -> Path:
        """The file or folder `rel` names inside the folder, when no part of it is a link."""
        path = self.path
        for part in rel.parts:
            path = path / part
            try:
                info = os.lstat(path)
            except OSError:
                raise Refused(f"no such run: {rel}") from None
            if stat.S_ISLNK(info.st_mode):
                raise Refused(f"refused symbolic link: {rel}")
        if path != self.path and self.path not in path.parents:
            raise Refused(f"outside the folder: {rel}")
        return path

    def resolve(self, raw: str) -> tuple[PurePosixPath, Path]:
        rel = self.relative(raw)
        return rel, self.file(rel)

    def rel_of(self, path: Path) -> PurePosixPath:
        return PurePosixPath(Path(path).relative_to(self.path).as_posix())


def url_path(rel: PurePosixPath) -> str:
    """A relative path as URL segments (each percent-encoded)."""
    return "/".join(quote_name(part) for part in rel.parts)


def quote_name(name: str) -> str:
    """A name percent-encoded from its bytes on disk (see the module docstring)."""
    try:
        return quote(os.fsencode(name), safe="")
    except UnicodeEncodeError:  # a lone surrogate no file name holds (a unit id read from JSON)
        return quote(name.encode("utf-8", "surrogatepass"), safe="")


def shown(text: str) -> str:
    """A text as a page or a line writes it: bytes of a name that are not UTF-8 as `\\xe9`."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate no file name holds (JSON may)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
