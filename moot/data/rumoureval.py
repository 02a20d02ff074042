"""RumourEval 2019 (Gorrell et al.; task B, veracity) to one thread per line (moot.data.threads).

The release (figshare, RumourEval 2019 data) is a tree of JSON files, one folder per thread:

    rumoureval-2019-test-data/               (or rumoureval-2019-training-data/)
      twitter-en-test-data/EVENT/ID/         (training: twitter-english/EVENT/ID/)
        source-tweet/ID.json                 a tweet: id_str, text (or full_text), created_at
        replies/REPLY.json                   tweets replying in the thread (in_reply_to_status_id_str)
        structure.json                       the reply tree: {ID: {REPLY: {...}, REPLY2: []}}
      reddit-test-data/ID/                   (training: reddit-training-data/, reddit-dev-data/)
        source-tweet/ID.json                 a Reddit listing: data.children[0].data (id, title,
                                             selftext, created_utc, subreddit)
        replies/REPLY.json                   a comment: data (id, body, created_utc, parent_id t1_/t3_)
        structure.json
    final-eval-key.json                      labels (training: train-key.json, dev-key.json):
                                             {"subtaskbenglish": {ID: true | false | unverified}, ...}

A thread with a task-B label becomes a row: the source post is the claim (Reddit: its title, and
its text when it has one), its replies the comments with their times in seconds after the source
post and their parents and depths from structure.json (else from the reply's own parent field),
and `event` (Twitter: the event folder; Reddit: reddit/SUBREDDIT), `platform`, `split` (from the
key file's name) and `n_dropped_deleted` (Reddit comments deleted or removed, left out) beside.
Threads in the key but not in the folder, and thread folders the key does not label, are counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence

from moot.data.threads import ConvertError, Post, Tally, Thread, read_json

TWEET_TIME = "%a %b %d %H:%M:%S %z %Y"  # Twitter's created_at: "Wed Mar 25 06:57:41 +0000 2015"
DELETED = ("[deleted]", "[removed]")
SPLITS = {"train-key": "train", "dev-key": "dev", "final-eval-key": "test"}


def read_keys(paths: Sequence[Path]) -> dict[str, tuple[str, str]]:
    """thread id -> (veracity label, split) from the key files' `subtaskbenglish`."""
    found: dict[str, tuple[str, str]] = {}
    for path in paths:
        data = read_json(path)
        labels = data.get("subtaskbenglish") if isinstance(data, dict) else None
        if not isinstance(labels, dict):
            raise ConvertError(f"{path}: no `subtaskbenglish` mapping (a RumourEval 2019 key file has one)")
        split = SPLITS.get(path.stem, path.stem)
        found.update({str(k): (str(v), split) for k, v in labels.items()})
    return found


def thread_folders(root: Path) -> Iterator[Path]:
    """Every folder holding a source-tweet/ folder (a thread), in name order."""
    if not root.is_dir():
        raise ConvertError(f"{root}: not a folder (give the release's extracted folder)")
    yield from sorted(p.parent for p in root.rglob("source-tweet") if p.is_dir())


def convert(root: Path, keys: Sequence[Path]) -> tuple[list[Thread], Tally]:
    labels, tally = read_keys(keys), Tally()
    threads = []
    seen = set()
    for folder in thread_folders(root):
        if folder.name not in labels:
            tally.add("thread folders the key files do not label (task B)")
            continue
        seen.add(folder.name)
        label, split = labels[folder.name]
        threads.append(_thread(folder, label, split))
    tally.add("labelled threads not in the folder", len(set(labels) - seen))
    return threads, tally


def _thread(folder: Path, label: str, split: str) -> Thread:
    source_file = folder / "source-tweet" / f"{folder.name}.json"
    if not source_file.is_file():
        found = sorted((folder / "source-tweet").glob("*.json"))
        if not found:
            raise ConvertError(f"{folder / 'source-tweet'}: no source post (.json)")
        source_file = found[0]
    data = read_json(source_file)
    reddit = isinstance(data, dict) and "data" in data  # a Reddit listing; a tweet has its text at the top
    source = _reddit(data, source_file) if reddit else _tweet(data, source_file)
    if source is None:
        raise ConvertError(f"{source_file}: the source post is deleted")
    structure = _parents(folder / "structure.json")
    replies, deleted = [], 0
    for path in sorted((folder / "replies").glob("*.json")):
        reply = _reddit(read_json(path), path) if reddit else _tweet(read_json(path), path)
        if reply is None:
            deleted += 1
            continue
        replies.append(Post(reply.id, reply.text, _after(reply.time, source.time),
                            structure.get(reply.id, reply.parent)))
    event = f"reddit/{source.subreddit}" if reddit else folder.parent.name
    return Thread(Post(folder.name, source.text, 0.0, None), label, tuple(replies),
                  {"event": event, "platform": "reddit" if reddit else "twitter", "split": split,
                   "n_dropped_deleted": deleted})


@dataclass(frozen=True)
class Read:
    """A post as its file gives it: `time` in seconds since the epoch, Reddit's subreddit."""

    id: str
    text: str
    time: Optional[float]
    parent: Optional[str]
    subreddit: str = ""


def _tweet(data: Any, path: Path) -> Optional[Read]:
    if not isinstance(data, dict) or not isinstance(data.get("text", data.get("full_text")), str):
        raise ConvertError(f"{path}: not a tweet (no text)")
    text = str(data.get("full_text") or data.get("text"))
    when = data.get("created_at")
    try:
        time = datetime.strptime(str(when), TWEET_TIME).timestamp() if when else None
    except ValueError:
        raise ConvertError(f"{path}: created_at {when!r} is not Twitter's date format") from None
    parent = data.get("in_reply_to_status_id_str") or data.get("in_reply_to_status_id")
    return Read(str(data.get("id_str") or data.get("id") or path.stem), text, time,
                None if parent is None else str(parent))


def _reddit(data: Any, path: Path) -> Optional[Read]:
    """A Reddit post or comment (a listing's first child, or the object itself); None when deleted."""
    post = data.get("data") if isinstance(data, dict) else None
    if isinstance(post, dict) and isinstance(post.get("children"), list) and post["children"]:
        first = post["children"][0]
        post = first.get("data") if isinstance(first, dict) else None
    if not isinstance(post, dict):
        raise ConvertError(f"{path}: not a Reddit post or comment (no `data`)")
    title, body = post.get("title"), post.get("body", post.get("selftext"))
    text = "\n\n".join(str(t) for t in (title, body) if t and str(t) not in DELETED)
    if not text:
        return None
    created = post.get("created_utc", post.get("created"))
    try:
        time = None if created is None else float(created)
    except (TypeError, ValueError):
        raise ConvertError(f"{path}: created_utc {created!r} is not a number") from None
    parent = str(post.get("parent_id") or "").partition("_")[2] or None
    return Read(str(post.get("id") or path.stem), text, time, parent, str(post.get("subreddit") or ""))


def _parents(path: Path) -> Mapping[str, str]:
    """post id -> its parent's id, from structure.json's nested tree (none: an empty mapping)."""
    if not path.is_file():
        return {}
    found: dict[str, str] = {}
    stack: list[tuple[Any, Optional[str]]] = [(read_json(path), None)]
    while stack:
        tree, parent = stack.pop()
        if isinstance(tree, dict):
            for post, below in tree.items():
                if parent is not None:
                    found[str(post)] = parent
                stack.append((below, str(post)))
    return found


def _after(time: Optional[float], source: Optional[float]) -> Optional[float]:
    return None if time is None or source is None else time - source
