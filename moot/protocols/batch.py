"""Running a per-item protocol over a dataset: bounded concurrency, results as they finish, resume.

A run directory holds `run.json` (what was run), `results.jsonl` (one line per finished item,
appended as it finishes), `transcripts/ID.jsonl` (one per item) and `cache.sqlite` (replies).
Started again on the same directory it skips every item with a result line; the replies of an
item that was cut short come from the cache, so no finished model call is ever repeated.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Iterable, Optional, TextIO

from moot.metrics import UNPARSED, MetricReport, summarize
from moot.protocols.context import Engine, RunStats
from moot.protocols.items import ItemResult, run_one
from moot.scenario import same_scenario


class RunDirError(ValueError):
    """A run directory that belongs to another scenario or dataset."""


def item_file(item_id: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", item_id)[:80]
    if safe != item_id:
        safe += "-" + hashlib.sha1(item_id.encode("utf-8")).hexdigest()[:8]
    return safe + ".jsonl"


def read_results(path: Path) -> dict[str, dict]:
    """Finished items by id; a torn last line (killed run) is ignored."""
    done: dict[str, dict] = {}
    if not path.exists():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and "id" in row:
            done[str(row["id"])] = row
    return done


LATEST_INFO = ("planned_items", "limit", "last_invoked")  # descriptive keys the latest invocation sets
FILE_KEY, CONTENT_KEY = "scenario_sha256", "scenario_content_sha256"  # moot.scenario hashes


def check_run_dir(out: Path, identity: dict, info: Optional[dict] = None) -> None:
    """Write run.json on first use; refuse a directory that holds a different run.

    `info` (paths, date, planned item count, see moot.protocols.runinfo) describes the run for
    reports and is never compared: added on first use, LATEST_INFO keys follow each invocation."""
    out.mkdir(parents=True, exist_ok=True)
    meta = out / "run.json"
    if meta.exists():
        before = json.loads(meta.read_text(encoding="utf-8"))
        changed = _changed(before, identity)
        if changed:
            raise RunDirError(f"{out} holds a run with another {', '.join(changed)}; "
                              f"choose another --out or delete it")
        # A run dir older than content hashes takes this one (its file sha256 matched).
        upgrade = {CONTENT_KEY: identity[CONTENT_KEY]} if CONTENT_KEY in identity else {}
        if info or upgrade:
            after = {**{k: v for k, v in (info or {}).items() if k != "created"}, **upgrade, **before,
                     **{k: info[k] for k in LATEST_INFO if info and k in info}}
            if after != before:
                meta.write_text(json.dumps(after, indent=2) + "\n", encoding="utf-8")
        return
    meta.write_text(json.dumps({**identity, **(info or {})}, indent=2) + "\n", encoding="utf-8")


def _changed(before: dict, identity: dict) -> list[str]:
    """Identity keys whose recorded value differs. The scenario is compared by its content hash
    (a comment-only edit of the file is the same run) or, for run dirs recorded before content
    hashes, by the file's sha256; the file sha256 itself is only cited, never compared then."""
    changed = [k for k in identity if k not in (FILE_KEY, CONTENT_KEY) and before.get(k) != identity[k]]
    if FILE_KEY in identity and not same_scenario(before.get(FILE_KEY), before.get(CONTENT_KEY),
                                                  identity[FILE_KEY], identity.get(CONTENT_KEY, "")):
        changed.insert(0, CONTENT_KEY if before.get(CONTENT_KEY) else FILE_KEY)
    return changed


@dataclass
class Progress:
    """One live status line on stderr: items done/total, ETA, calls, tokens, unparsed."""

    total: int
    done: int
    stats: RunStats
    stream: TextIO = field(default_factory=lambda: sys.stderr)  # looked up when used, not at import
    unparsed: int = 0
    failed: int = 0
    started: float = field(default_factory=time.monotonic)
    _first: int = -1
    _last: float = 0.0

    def __post_init__(self) -> None:
        self._first = self.done

    def line(self) -> str:
        new = self.done - self._first
        elapsed = time.monotonic() - self.started
        left = self.total - self.done
        eta = f"{elapsed / new * left:.0f}s" if new else "?"
        failed = f" failed={self.failed}" if self.failed else ""
        return (f"[{self.done}/{self.total}] ETA {eta} calls={self.stats.backend_calls} "
                f"cached={self.stats.cache_hits} tokens={self.stats.tokens} unparsed={self.unparsed}{failed}")

    def show(self, force: bool = False) -> None:
        """Redraw (at most 5 times a second); without a terminal, print one line per item only."""
        now = time.monotonic()
        tty = self.stream.isatty()
        if not force and (not tty or now - self._last < 0.2):
            return
        self._last = now
        end = "\r" if tty else "\n"
        self.stream.write("\x1b[2K" + self.line() + end if end == "\r" else self.line() + end)
        self.stream.flush()


@dataclass
class BatchOutcome:
    out: Path
    results: list[dict]
    failed: list[ItemResult]
    report: Optional[MetricReport]

    @property
    def unparsed(self) -> int:
        return sum(1 for r in self.results if r.get("prediction") == UNPARSED)


async def run_batch(proto: ModuleType, scenario, scenario_path: Path, scenario_sha: str, items: Iterable,
                    engine: Engine, out: Path, progress_stream: Optional[TextIO] = None,
                    metric: Optional[str] = None) -> BatchOutcome:
    """Run every item without a result yet, `engine.concurrency` calls in flight at most;
    `metric` heads the metrics (default: the scenario's headline metric)."""
    items = list(items)
    progress_stream = progress_stream or sys.stderr
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.jsonl"
    done = read_results(results_path)
    todo = [item for item in items if item.id not in done]
    progress = Progress(len(items), len(items) - len(todo), engine.stats, progress_stream)
    progress.unparsed = sum(1 for i in items if done.get(i.id, {}).get("prediction") == UNPARSED)
    failed: list[ItemResult] = []
    progress.show(force=True)
    queue: asyncio.Queue = asyncio.Queue()
    for item in todo:
        queue.put_nowait(item)
    with open(results_path, "a", encoding="utf-8") as sink:
        async def worker() -> None:
            while not queue.empty():
                item = queue.get_nowait()
                result = await run_one(proto, scenario, scenario_path, scenario_sha, engine, item,
                                       out / "transcripts" / item_file(item.id),
                                       lambda event: progress.show())
                if result.status != "completed":
                    failed.append(result)
                    progress.failed += 1
                else:
                    done[item.id] = result.record()
                    sink.write(json.dumps(done[item.id], ensure_ascii=False) + "\n")
                    sink.flush()
                    progress.done += 1
                    progress.unparsed += result.prediction == UNPARSED
                progress.show(force=True)

        # Items in flight: twice the call bound, so sequential stages never leave a slot idle.
        await asyncio.gather(*(worker() for _ in range(min(len(todo), 2 * engine.concurrency))))
    if progress_stream.isatty():
        progress_stream.write("\n")
    results = [done[i.id] for i in items if i.id in done]
    return BatchOutcome(out, results, failed, metrics_of(results, scenario, metric))


def metrics_of(results: list[dict], scenario, metric: Optional[str] = None) -> Optional[MetricReport]:
    scored = [r for r in results if r.get("gold") is not None]
    if not scored:
        return None
    return summarize([r["gold"] for r in scored], [r["prediction"] for r in scored],
                     list(scenario.labels), metric=metric or scenario.headline_metric())
