"""Reply threads, one per line: the shape moot's thread datasets read (S2MAD's rumour sets,
RumourEval) and what `moot convert` writes from a release's own layout.

    {"id": ROOT_ID, "claim": ROOT_TEXT, "label": LABEL,
     "comments": [{"id", "text", "time" (after the root post), "parent", "depth" (1: a reply to the root)}],
     ...the release's own fields (event, platform, split)}

Comments are in time order (the release's order where a time is missing). A converter builds
`Thread`s and a `Tally` of what it left out and why; `write_threads` writes them whole (a file
that exists is refused: nothing is replaced or half-written).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence

from moot.errors import MootError
from moot.safety.diskio import write_atomic

MAX_JSON = 8 * 2**20  # bytes of one JSON file of a release (a tweet, a thread's structure): far more than any


class ConvertError(MootError, ValueError):
    """A release that is not in the layout a converter reads: one line naming the file (and line)."""


@dataclass(frozen=True)
class Post:
    """A post of a thread: its id, text, time after the root post (None: not given) and parent id."""

    id: str
    text: str
    time: Optional[float]
    parent: Optional[str]


@dataclass(frozen=True)
class Thread:
    root: Post
    label: str
    comments: tuple[Post, ...]
    extra: Mapping[str, Any] = field(default_factory=dict)  # the release's own fields, kept beside

    def row(self) -> dict[str, Any]:
        depths = depths_below(self.root.id, self.comments)
        ordered = sorted(enumerate(self.comments), key=lambda ic: (ic[1].time is None, ic[1].time or 0.0, ic[0]))
        return {"id": self.root.id, "claim": self.root.text, "label": self.label,
                "comments": [{"id": c.id, "text": c.text, "time": c.time, "parent": c.parent, "depth": depths.get(c.id)}
                             for _, c in ordered],
                **self.extra}


def depths_below(root: str, posts: Sequence[Post]) -> dict[str, int]:
    """Each post's depth under the root (1: a reply to it), following parents; a post whose chain
    does not reach the root has none."""
    parent = {p.id: p.parent for p in posts}
    found: dict[str, int] = {}
    for post in posts:
        chain: list[str] = []
        at = post.id
        while at != root and at in parent and at not in found and len(chain) <= len(posts):
            chain.append(at)
            at = parent[at] or ""
        base = 0 if at == root else found.get(at)
        if base is None:
            continue
        for depth, post_id in enumerate(reversed(chain), base + 1):
            found[post_id] = depth
    return found


@dataclass
class Tally:
    """What a conversion left out, by reason (printed after it, so nothing goes missing unsaid)."""

    left_out: Counter[str] = field(default_factory=Counter)

    def add(self, reason: str, n: int = 1) -> None:
        if n:
            self.left_out[reason] += n

    def lines(self) -> list[str]:
        return [f"left out: {n} {reason}" for reason, n in sorted(self.left_out.items())]


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(number, line) of a release's UTF-8 text file, each line bounded (moot.data.load.bounded_lines)."""
    from moot.data.load import bounded_lines

    try:
        with open(path, encoding="utf-8", newline="") as f:
            yield from enumerate(bounded_lines(f, path), 1)
    except FileNotFoundError:
        raise ConvertError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise ConvertError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_json(path: Path) -> Any:
    """A release's JSON file, its size bounded before it is read; one line naming it when it is not JSON."""
    try:
        if path.stat().st_size > MAX_JSON:
            raise ConvertError(f"{path}: larger than {MAX_JSON // 2**20} MiB: not a file of this release")
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise ConvertError(f"{path}: not JSON ({' '.join(str(exc).split())})") from None
    except FileNotFoundError:
        raise ConvertError(f"{path}: no such file") from None


def write_threads(threads: Sequence[Thread], out: Path) -> None:
    """One thread per line, written whole; an existing file is refused."""
    if out.exists() or out.is_symlink():
        raise ConvertError(f"--out {out}: exists; choose another path (nothing is replaced)")
    if not threads:
        raise ConvertError(f"--out {out}: no thread to write (see what was left out above)")
    text = "".join(json.dumps(t.row(), ensure_ascii=False) + "\n" for t in threads)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, text, replace=False)
