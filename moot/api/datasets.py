"""Datasets from Python: a rumour dataset's public release converted to one thread per line (`moot
convert`).

The rumour datasets' releases keep their reply threads as trees of files; moot's thread datasets
read one thread per line of JSON (moot.data.threads). A file that is not in the release's layout is
a ConvertError naming it (and its line); the output is written whole and never replaces a file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from moot.api.options import PathLike
from moot.data.threads import ConvertError, Tally, Thread, write_threads
from moot.errors import UsageError, nearest

Converter = Callable[[Sequence[Path]], tuple[list[Thread], Tally]]


def _aclr(paths: Sequence[Path]) -> tuple[list[Thread], Tally]:
    from moot.data.aclr import convert

    if len(paths) != 2:
        raise ConvertError("aclr4rumor: give the posts file and the label file (e.g. Twitter_data_all.txt "
                           "Twitter_label_all.txt)")
    return convert(paths[0], paths[1])


def _rumoureval(paths: Sequence[Path]) -> tuple[list[Thread], Tally]:
    from moot.data.rumoureval import convert

    if len(paths) < 2:
        raise ConvertError("rumoureval2019: give the release's folder and its key file(s) "
                           "(e.g. rumoureval-2019-test-data final-eval-key.json)")
    return convert(paths[0], paths[1:])


RELEASES: Mapping[str, Converter] = {"aclr4rumor": _aclr, "rumoureval2019": _rumoureval}
PUBLISHED: Mapping[str, str] = {  # where a user downloads each release (a missing file's line says so)
    "aclr4rumor": "github.com/DanielLin97/ACLR4RUMOR-NAACL2022, data/Twitter/COVID-19 and data/Weibo",
    "rumoureval2019": "figshare.com/articles/RumourEval_2019_data/8845580",
}


@dataclass(frozen=True)
class Converted:
    """A release read as threads, and what was left out of it, by reason (`left_out` lines)."""

    threads: Sequence[Thread]
    tally: Tally

    @property
    def left_out(self) -> list[str]:
        return self.tally.lines()

    @property
    def comments(self) -> int:
        return sum(len(t.comments) for t in self.threads)

    def write(self, out: PathLike) -> Path:
        """One thread per line to `out`, written whole; an existing file is refused (ConvertError)."""
        write_threads(self.threads, Path(out))
        return Path(out)


def convert_release(release: str, sources: Sequence[PathLike]) -> Converted:
    """Read a release (`aclr4rumor`: the posts file and the label file; `rumoureval2019`: the
    extracted folder and its key file(s)) as threads."""
    if release not in RELEASES:
        raise UsageError(f"unknown release {release!r} (one of {', '.join(sorted(RELEASES))})"
                           f"{nearest(release, RELEASES)}")
    paths = [Path(s) for s in sources]
    for path in paths:
        if not path.exists():
            raise ConvertError(f"{path}: no such file (the {release} release is published at {PUBLISHED[release]})")
    threads, tally = RELEASES[release](paths)
    return Converted(threads, tally)
