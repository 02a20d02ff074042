"""A finished (or partial) run, read back for a report; nothing is re-run.

A run is a run folder (or a transcript file). Runs of a per-item protocol are scored from
`results.jsonl` only (gold and prediction of each finished item); `run.json` says what was run
(model specs, scenario and dataset hashes, planned unit count, the declared headline metric, the
rows the dataset loader skipped, dates). A run with fewer results than planned units, or with
units whose transcript ended without a result, is partial. Every transcript is loaded strictly
(a damaged one is an error naming its line); an item's target (for per-target columns) is its
`run_started` input. Folders written by earlier moot versions (rows naming
`runs/X/transcripts/ID.jsonl`, item transcripts of schema 1) load too.
Runs whose units are runs of the scenario are read by their protocol's report hook
(moot.contract.report), from their transcripts; `Run` only holds their source and ref.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping, Optional

from moot.contract.metrics import MetricSet
from moot.contract.protocol import Protocol
from moot.metrics import stats
from moot.metrics.classification import UNPARSED, MetricReport, summarize, value_of
from moot.metrics.coded import Resampling, features, score, value
from moot.saved.files import RunFolderError
from moot.saved.source import RunSource, UnitRef, open_run
from moot.log.transcript import Transcript
from moot.errors import MootError


class RunError(MootError, ValueError):
    """Not a run (no run folder or transcript), or a labelled run with no scored result."""


@dataclass
class Run:
    source: RunSource
    results: list[dict[str, Any]]
    ref: str = ""
    targets: dict[str, str] = field(default_factory=dict)
    contract: Optional[Protocol[Any]] = None  # its registered protocol (None: not one moot knows)

    @property
    def path(self) -> Path:
        return self.source.path

    @property
    def meta(self) -> dict[str, Any]:
        return self.source.meta

    # --- what was run -------------------------------------------------------------------
    @property
    def protocol(self) -> str:
        return str(self.meta.get("protocol") or self.scenario_fields.get("protocol") or "?")

    @property
    def scenario_fields(self) -> dict[str, Any]:
        found = self.meta.get("scenario")
        return found if isinstance(found, dict) else {}

    @property
    def variant(self) -> str:
        """Its row name: the protocol's (moot.contract.report), else the scenario file's stem."""
        named = self.contract.report.variant if self.contract else None
        if named is not None:
            return named(self.meta)
        path = self.meta.get("scenario_path")
        return Path(path).stem if path else self.protocol

    @property
    def model(self) -> str:
        return models_text(self.meta.get("models") or {})

    @property
    def dataset(self) -> str:
        path = self.meta.get("dataset_path")
        return Path(path).stem if path else f"dataset {str(self.meta.get('dataset_sha256', '?'))[:8]}"

    @cached_property
    def labels(self) -> list[str]:
        if self.meta.get("labels"):
            return list(self.meta["labels"])
        seen = {r["gold"] for r in self.scored} | {r["prediction"] for r in self.scored}
        return sorted(seen - {UNPARSED, None})

    @property
    def metric_set(self) -> Optional[MetricSet]:
        """The metric set its protocol declares that its labels define (moot.contract.metrics)."""
        return self.contract.metrics.set_for(self.labels) if self.contract else None

    @property
    def by_headline(self) -> bool:
        """Whether its main-table cells are its headline metric (no protocol tables, no metric set)."""
        return self.metric_set is None and (self.contract is None or self.contract.report.tables is None)

    @property
    def metric(self) -> str:
        """The headline metric run.json declares (`headline_metric`; folders of earlier moot
        versions: the scenario's `metric`), never guessed from a file name; else macro-F1."""
        return self.meta.get("headline_metric") or self.meta.get("metric") or "macro_f1"

    @property
    def metric_source(self) -> str:
        declared = self.meta.get("headline_metric") or self.meta.get("metric")
        return f"{self.metric} (run.json)" if declared else "macro_f1 (not declared in run.json)"

    @property
    def skipped(self) -> dict[str, int]:
        """Dataset rows the loader skipped, by reason (run.json `skipped_rows`)."""
        return dict(self.meta.get("skipped_rows") or {})

    @property
    def rescored(self) -> str:
        found = self.meta.get("rescored")
        if not found:
            return ""
        roles = ", ".join(f"{k}={v}" for k, v in found.get("roles", {}).items())
        return f"rescored from {found.get('from', '?')} ({roles})"

    # --- what came out ------------------------------------------------------------------
    @cached_property
    def scored(self) -> list[dict[str, Any]]:
        return [r for r in self.results if r.get("gold") is not None]

    @property
    def planned(self) -> Optional[int]:
        return self.meta.get("planned_units", self.meta.get("planned_items"))

    @cached_property
    def failed(self) -> int:
        """Units with a transcript but no result (their last run ended in failure or was cut short)."""
        if not self.source.is_folder:
            return len(self.source.units) - len(self.results)
        return sum(1 for u in self.source.units if u.row is None)

    @property
    def partial(self) -> bool:
        return (self.planned is not None and len(self.results) < self.planned) or self.failed > 0

    @property
    def status(self) -> str:
        if self.planned is None:
            return "partial" if self.failed else "unknown plan (run.json lacks planned_units)"
        if not self.partial:
            return "complete"
        more = f", {self.failed} failed or cut short" if self.failed else ""
        return f"partial ({len(self.results)} of {self.planned} items{more})"

    @property
    def unparsed(self) -> int:
        return sum(1 for r in self.results if r.get("prediction") not in set(self.labels))

    @property
    def date(self) -> str:
        return run_dates(self.source)

    def rows_of(self, target: Optional[str] = None) -> list[dict[str, Any]]:
        """Its scored results (of one target)."""
        rows = [r for r in self.scored if target is None or self.targets.get(str(r["id"])) == target]
        if not rows:
            raise RunError(f"{self.path}: no scored results" + (f" for target {target!r}" if target else ""))
        return rows

    def report(self, target: Optional[str] = None) -> MetricReport:
        rows = self.rows_of(target)
        metric = self.metric if self.by_headline else "macro_f1"
        return summarize([r["gold"] for r in rows], [r["prediction"] for r in rows], self.labels, metric=metric)

    @cached_property
    def resampling(self) -> Resampling:
        return Resampling(stats.RESAMPLES, stats.SEED)

    def interval(self, metric: str, target: Optional[str] = None) -> stats.Interval:
        """`metric` over its scored items (of one target) with the 95% percentile bootstrap interval
        over items an experiment's report gives a single repeat (moot.experiment.analysis: same
        draws), flagged under `stats.FEW_ITEMS` items; `metric` as moot.metrics.coded names it."""
        rows = self.rows_of(target)
        run = features([r["gold"] for r in rows], [r["prediction"] for r in rows], self.labels)
        draws = score(self.resampling.counts(target, run), metric, self.labels)
        return stats.percentile_interval(value(run, metric, self.labels), draws, len(rows), self.resampling.resamples,
                                         self.resampling.seed)

    def value(self, metric: str) -> float:
        """One classification metric over all its scored items (moot.metrics.classification)."""
        return value_of(self.report(), metric, self.labels)

    def target_values(self) -> list[str]:
        return sorted({self.targets[str(r["id"])] for r in self.scored if str(r["id"]) in self.targets})


def models_text(models: Mapping[str, str]) -> str:
    """`scripted`, or the spec most roles use and the others: `scripted (judger=openai:gpt-4o)`."""
    specs = Counter(models.values())
    if not specs:
        return "?"
    common, _ = specs.most_common(1)[0]
    others = ", ".join(f"{k}={v}" for k, v in sorted(models.items()) if v != common)
    return str(common) + (f" ({others})" if others else "")


def run_dates(source: RunSource) -> str:
    """`FIRST .. LAST` (UTC): the first invocation (run.json `created`) to the last result or
    transcript written. A folder made before run.json recorded dates gets its first date from
    the oldest file it holds, marked `≈` (an estimate)."""
    def stamp(path: Path) -> str:
        return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")

    files = [p for p in (source.path / "results.jsonl", source.path / "run.json", *(u.path for u in source.units))
             if p.is_file()]
    created = source.meta.get("created") or "≈" + stamp(min(files, key=lambda f: f.stat().st_mtime))
    last = source.path / "results.jsonl" if (source.path / "results.jsonl").is_file() else \
        max(files, key=lambda f: f.stat().st_mtime)
    return f"{created} .. {stamp(last)}"


def protocol_of(source: RunSource) -> str:
    found = source.meta.get("protocol") or (source.meta.get("scenario") or {}).get("protocol")
    if found:
        return str(found)
    return source.units[0].load().protocol if source.units else "?"


def open_source(path: Path) -> RunSource:
    try:
        return open_run(path)
    except RunFolderError as exc:
        raise RunError(str(exc)) from None


def load_run(source: RunSource, ref: str = "", contract: Optional[Protocol[Any]] = None) -> Run:
    """A per-item run: its results (a transcript file: its outcome) and the items' targets. Every
    transcript is read strictly: a damaged one is an error naming its line, so a run is never
    reported complete over a transcript that does not load."""
    loaded = [(u, u.load()) for u in source.units]
    triples = [(u, t, u.row if source.is_folder else row_of(u, t)) for u, t in loaded]
    run = Run(source, [r for _, _, r in triples if r], ref, contract=contract)
    if not run.scored:
        raise RunError(f"{source.path}: no result with a gold label to score")
    targets = {str(r["id"]): (t.started.inputs or {}).get("target") for _, t, r in triples if r}
    run.targets = {k: v for k, v in targets.items() if v}
    return run


def row_of(unit: UnitRef, transcript: Transcript) -> Optional[dict[str, Any]]:
    found = transcript.outcome
    if found is None:
        return None
    return {"id": unit.id, "prediction": found.prediction, "gold": found.gold, "transcript": str(unit.path)}
