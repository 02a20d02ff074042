"""The runs and experiments under the served folder, each summarised without opening its units.

A run is a run folder (it holds run.json or results.jsonl) or a transcript file outside any run
folder; an experiment is a folder holding experiment.json, whose runs are the run folders below it.
A summary reads run.json, results.jsonl, the folder's listing and the last line of each transcript
that has no result row (to tell a failed unit from one cut short); it is kept until any of those
changes, or recomputed every time while the run folder's lock is held (a run in progress).
Whatever cannot be read becomes the summary's `problem` (one line naming the file and line); the
other runs are not affected.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Iterator, Mapping, Optional

from moot.contract.metrics import UnitRecord
from moot.contract.registry import PROTOCOLS, AnyProtocol
from moot.engine.folder import held_locks, lock_holder
from moot.saved.files import read_record, result_rows
from moot.saved.records import ResultRow, RunMeta
from moot.saved.source import NOT_TRANSCRIPTS, SET_ASIDE
from moot.errors import MootError
from moot.safety.diskio import open_regular, read_regular
from moot.saved.run import gold_and_predictions, models_text
from moot.viewer.experiments import Findings, findings
from moot.viewer.figures import Figure, Intervals, classification, mean, point
from moot.viewer.paths import Root

EXPERIMENT = "experiment.json"
TAIL_BYTES = 16_384
STATUSES = ("running", "finished", "failed", "interrupted")


@dataclass(frozen=True)
class Tail:
    """How a transcript ends: its last event's type, the run_finished status if that is it, the
    unit's id from its first line (when read), and whether a torn line follows (being written)."""

    last: str = ""
    status: str = ""
    torn: bool = False
    seq: int = 0


@dataclass(frozen=True)
class RunSummary:
    """One run as the runs list shows it."""

    rel: PurePosixPath
    is_folder: bool
    protocol: str = "?"
    title: str = ""
    scenario: str = ""
    dataset: str = ""
    models: str = ""
    status: str = "finished"
    done: int = 0
    total: Optional[int] = None
    failed: int = 0
    noun: str = "units"
    headline: Optional[Figure] = None
    started: str = ""
    wall_s: Optional[float] = None
    experiment: str = ""  # the experiment folder it belongs to (relative), if any
    arm: str = ""  # its arm in that experiment (the first folder below it)
    problem: str = ""  # what could not be read, if anything
    holder: Optional[int] = None  # the pid holding its lock (running)

    @property
    def name(self) -> str:
        return self.rel.as_posix() if self.rel.parts else "."

    @property
    def progress(self) -> str:
        return f"{self.done}/{self.total}" if self.total is not None else str(self.done)


@dataclass(frozen=True)
class Experiment:
    """An experiment folder and its runs (its cells); its findings only where its page asks for them."""

    rel: PurePosixPath
    title: str
    runs: tuple[RunSummary, ...] = ()
    findings: Findings = Findings()
    reference: str = ""  # the arm the others are compared with

    @property
    def arms(self) -> list[str]:
        return sorted({r.arm for r in self.runs if r.arm})

    @property
    def base(self) -> str:
        """The arm the others are compared with: its reference when that has runs, else its first."""
        arms = self.arms
        return self.reference if self.reference in arms else (arms[0] if arms else "")

    @property
    def done(self) -> int:
        return sum(r.done for r in self.runs)

    @property
    def statuses(self) -> list[tuple[str, int]]:
        """How many of its runs are in each status (those it has)."""
        return [(s, n) for s in STATUSES if (n := sum(1 for r in self.runs if r.status == s))]

    def cell(self, run: RunSummary) -> str:
        """Where a run is below its arm (DATASET/MODEL/seed-S)."""
        below = run.rel.relative_to(self.rel)
        return PurePosixPath(*below.parts[1:]).as_posix() if len(below.parts) > 1 else below.as_posix()


@dataclass
class Catalog:
    """Every run and experiment under a folder (see the module docstring)."""

    root: Root
    intervals: Intervals = field(default_factory=Intervals)
    _cache: dict[Path, tuple[tuple[Any, ...], RunSummary]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _walking: threading.Lock = field(default_factory=threading.Lock)

    def runs(self) -> list[RunSummary]:
        with self._walking:  # one walk at a time: a second caller then finds the summaries kept
            locks = held_locks()
            found = [self.summary(path, is_folder, experiment, locks) for path, is_folder, experiment in self.walk()]
        return sorted(found, key=lambda r: (r.experiment, r.started or "", r.name), reverse=True)

    def experiments(self, runs: list[RunSummary]) -> list[Experiment]:
        """Every experiment among `runs`, without its findings (its page computes them)."""
        groups: dict[str, list[RunSummary]] = {}
        for run in runs:
            if run.experiment:
                groups.setdefault(run.experiment, []).append(run)
        return [self.experiment_of(PurePosixPath(rel), found) for rel, found in sorted(groups.items())]

    def experiment(self, rel: PurePosixPath, runs: list[RunSummary]) -> Experiment:
        """The experiment at `rel` with its findings (pending while a large one is analysed)."""
        found = self.experiment_of(rel, [r for r in runs if r.experiment == rel.as_posix()])
        key = (rel, tuple((r.name, r.done, r.status) for r in found.runs))
        return replace(found, findings=findings(self.intervals, self.root.path / rel, found.done, key))

    def experiment_of(self, rel: PurePosixPath, runs: list[RunSummary]) -> Experiment:
        manifest = manifest_of(self.root.path / rel)
        return Experiment(rel, experiment_title(manifest, self.root.path / rel),
                          tuple(sorted(runs, key=lambda r: r.name)), reference=reference_arm(manifest))

    def walk(self) -> Iterator[tuple[Path, bool, str]]:
        """(path, is a folder, experiment) of every run under the root; links and hidden names skipped."""
        stack: list[tuple[Path, str]] = [(self.root.path, "")]
        while stack:
            folder, experiment = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            names = {e.name for e in entries}
            if "run.json" in names or "results.jsonl" in names:
                yield folder, True, experiment
                continue
            if EXPERIMENT in names:
                experiment = self.root.rel_of(folder).as_posix()
            for entry in entries:
                if entry.name.startswith(".") or entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append((Path(entry.path), experiment))
                elif is_transcript_name(entry.name) and entry.is_file(follow_symlinks=False):
                    yield Path(entry.path), False, experiment

    def summary(self, path: Path, is_folder: bool, experiment: str = "",
                locks: Optional[Mapping[tuple[int, int, int], int]] = None) -> RunSummary:
        """One run's summary, from the cache while its files are unchanged and it is not running."""
        locks = held_locks() if locks is None else locks
        stamp = stamps(path, is_folder)
        holder = lock_holder(path / "run.lock", locks) if is_folder else None
        with self._lock:
            cached = self._cache.get(path)
        if cached is not None and cached[0] == stamp and holder is None and cached[1].holder is None:
            return self.settled(path, stamp, cached[1])  # (one kept while it ran is not: it has stopped since)
        rel = self.root.rel_of(path)
        arm = rel.relative_to(experiment).parts[0] if experiment and rel.parts != PurePosixPath(experiment).parts \
            and len(rel.relative_to(experiment).parts) > 1 else ""
        base = RunSummary(rel, is_folder, experiment=experiment, arm=arm, holder=holder)
        try:
            found = summarize_folder(path, base, self.intervals) if is_folder else summarize_file(path, base)
        except (MootError, OSError, ValueError) as exc:
            found = replace(base, status="failed", problem=str(exc))
        with self._lock:
            self._cache[path] = (stamp, found)
        return found

    def settled(self, path: Path, stamp: tuple[Any, ...], found: RunSummary) -> RunSummary:
        """A kept summary, with its headline's interval once it is computed (then kept so)."""
        if found.headline is None or not found.headline.pending:
            return found
        headline = self.intervals.settled((path, stamp), found.headline)
        if headline is found.headline:
            return found
        found = replace(found, headline=headline)
        with self._lock:
            self._cache[path] = (stamp, found)
        return found


def manifest_of(folder: Path) -> dict[str, Any]:
    """An experiment folder's experiment.json ({} when it cannot be read: its page says what `moot
    report` says of it)."""
    try:
        data = json.loads(read_regular(folder / EXPERIMENT))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def experiment_title(manifest: Mapping[str, Any], folder: Path) -> str:
    title = manifest.get("title") or manifest.get("name")
    return str(title) if title else folder.name


def reference_arm(manifest: Mapping[str, Any]) -> str:
    """The arm the others are compared with: the experiment's `compare: reference`, else its first arm."""
    reference = mapping(manifest.get("compare")).get("reference")
    order = manifest.get("order") or list(mapping(manifest.get("arms")))
    return str(reference or (order[0] if isinstance(order, list) and order else ""))


def is_transcript_name(name: str) -> bool:
    return name.endswith(".jsonl") and name not in NOT_TRANSCRIPTS and not SET_ASIDE.search(name)


def stamps(path: Path, is_folder: bool) -> tuple[Any, ...]:
    """What changes when the run changes (its folder's listing, run.json, results.jsonl)."""
    def stamp(p: Path) -> tuple[int, int]:
        try:
            info = p.stat()
        except OSError:
            return (0, 0)
        return (info.st_mtime_ns, info.st_size)

    if not is_folder:
        return (stamp(path),)
    return (stamp(path), stamp(path / "run.json"), stamp(path / "results.jsonl"))


# ---------------------------------------------------------------------------------------------- tails
def tail(path: Path) -> Tail:
    """How a transcript ends (see Tail), from its last TAIL_BYTES."""
    with open_regular(path) as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - TAIL_BYTES))
        data = f.read()
    lines = data.split(b"\n")
    torn = bool(lines[-1].strip())
    for line in reversed(lines[1:] if size > TAIL_BYTES else lines):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            last = str(event.get("type", ""))
            status = str(event.get("status", "")) if last == "run_finished" else ""
            seq = event.get("seq")
            return Tail(last, status, torn and line is not lines[-1], seq if isinstance(seq, int) else 0)
    return Tail(torn=torn)


def first_event(path: Path) -> dict[str, Any]:
    with open_regular(path) as f:
        line = f.readline(4_000_000)
    try:
        found = json.loads(line)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


# ---------------------------------------------------------------------------------------------- summaries
def contract_of(name: str) -> Optional[AnyProtocol]:
    return PROTOCOLS.get(name) if name in PROTOCOLS else None


def stamp_text(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")


def summarize_folder(path: Path, base: RunSummary, intervals: Intervals) -> RunSummary:
    meta = read_record(path) or RunMeta()
    results = list(result_rows(path))
    listed = {Path(r.transcript or "").name for r in results}
    loose = [e for e in os.scandir(path) if is_transcript_name(e.name) and e.name not in listed and e.is_file()]
    ends = [tail(Path(e.path)) for e in loose]
    failed = sum(1 for t in ends if t.status == "failed")
    cut = sum(1 for t in ends if t.status != "failed")
    protocol = meta.protocol_name or (str(first_event(Path(loose[0].path)).get("protocol")) if loose else "?")
    contract = contract_of(protocol)
    status = run_status(base.holder, failed, cut, len(results), meta.planned)
    file = path / "results.jsonl"
    times = [e.stat().st_mtime for e in loose] + ([file.stat().st_mtime] if file.exists() else [])
    created = meta.created or ""
    return replace(
        base, protocol=protocol, title=str(meta.scenario_fields.get("title") or ""), scenario=meta.scenario_name,
        dataset=meta.dataset_name, models=models_text(meta.models or {}), status=status, done=len(results),
        total=meta.planned, failed=failed, noun=contract.units.noun if contract else "units",
        headline=headline(results, meta, contract, intervals, (path, stamps(path, True))),  # Catalog.settled's key
        started=created, wall_s=wall_seconds(created, max(times) if times else None))


def mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def run_status(holder: Optional[int], failed: int, cut: int, done: int, total: Optional[int]) -> str:
    if holder is not None:
        return "running"
    if failed:
        return "failed"
    if cut or (total is not None and done < total):
        return "interrupted"
    return "finished"


def wall_seconds(created: str, last: Optional[float]) -> Optional[float]:
    """From the run's creation to its last write (across every invocation)."""
    if not created or last is None:
        return None
    try:
        start = datetime.fromisoformat(created).timestamp()
    except ValueError:
        return None
    return max(0.0, last - start)


def summarize_file(path: Path, base: RunSummary) -> RunSummary:
    """A transcript file on its own: one unit."""
    first, end = first_event(path), tail(path)
    if first.get("type") != "run_started":
        return replace(base, status="failed", problem=f"{path.name}:1: not a moot transcript")
    protocol = str(first.get("protocol", "?"))
    contract = contract_of(protocol)
    scenario = mapping(first.get("scenario"))
    status = {"completed": "finished", "failed": "failed"}.get(end.status, "interrupted")
    return replace(base, protocol=protocol, title=str(scenario.get("title") or ""),
                   scenario=Path(str(first.get("scenario_path") or "")).stem,
                   models=models_text(first.get("models") or {}), status=status,
                   done=1 if end.status == "completed" else 0, total=1, failed=int(end.status == "failed"),
                   noun=contract.units.noun if contract else "units", started=str(first.get("ts") or ""))


def headline(results: list[ResultRow], meta: RunMeta, contract: Optional[AnyProtocol], intervals: Intervals,
             key: Any) -> Optional[Figure]:
    """The run's headline: its classification metric over scored items, else the mean of its
    protocol's headline measure (when that reads only results rows); with its interval
    (moot.viewer.figures), kept under `key` by `intervals`."""
    scored = [r for r in results if r.labelled]
    labels = list(meta.labels or [])
    if scored and labels:
        metric = meta.headline or "macro_f1"
        gold, pred = gold_and_predictions(scored)
        return intervals.figure(key, len(gold), lambda: classification(gold, pred, labels, metric),
                                lambda: point(gold, pred, labels, metric))
    if contract is None or not results:
        return None
    measure = contract.metrics.measure(contract.metrics.headline)
    if measure.reads_transcript:
        return None
    values = [v for v in (measure.of(UnitRecord(row, labels)) for row in results) if v is not None]
    return intervals.figure(key, len(values), lambda: mean(measure.name, values),
                            lambda: Figure(measure.name, sum(values) / len(values) if values else None, len(values)))
