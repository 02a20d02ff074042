"""A finished (or partial) run's results read back and scored; nothing is re-run.

A run is a run folder (or a transcript file). Runs of a per-item protocol are scored from
`results.jsonl` only (gold and prediction of each finished item); `run.json` says what was run
(model specs, scenario and dataset hashes, planned unit count, the declared headline metric, the
rows the dataset loader skipped, dates). A run with fewer results than planned units, or with
units whose transcript ended without a result, is partial. Folders written by earlier moot
versions (rows naming `runs/X/transcripts/ID.jsonl`, item transcripts of schema 1, run.json's
`planned_items` and `metric`) load too. What its protocol adds (its row name, its metric sets)
is moot.report.runs.Run's, above the contract; a protocol's report hooks receive RunResults.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping, Optional

from moot.errors import MootError
from moot.log.transcript import Transcript
from moot.metrics import stats
from moot.metrics.classification import UNPARSED, MetricReport, summarize, value_of
from moot.metrics.coded import Resampling, features, score, value
from moot.saved.records import ResultRow, RunMeta
from moot.saved.source import RunSource, UnitRef


class RunError(MootError, ValueError):
    """Not a run (no run folder or transcript), or a labelled run with no scored result."""


@dataclass
class RunResults:
    source: RunSource
    results: list[ResultRow]
    ref: str = ""
    targets: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return self.source.path

    @property
    def record(self) -> RunMeta:
        """Its run.json, typed."""
        return self.source.record

    # --- what was run -------------------------------------------------------------------
    @property
    def protocol(self) -> str:
        return self.record.protocol_name or "?"

    @property
    def scenario_fields(self) -> dict[str, Any]:
        return self.record.scenario_fields

    @property
    def model(self) -> str:
        return models_text(self.record.models or {})

    @property
    def dataset(self) -> str:
        return self.record.dataset_name or f"dataset {(self.record.dataset_sha256 or '?')[:8]}"

    @cached_property
    def labels(self) -> list[str]:
        if self.record.labels:
            return list(self.record.labels)
        seen = {r.gold for r in self.scored} | {r.prediction for r in self.scored}
        return sorted(label for label in seen if label is not None and label != UNPARSED)

    @property
    def by_headline(self) -> bool:
        """Whether its main-table cells are its headline metric (a protocol may say otherwise:
        moot.report.runs.Run)."""
        return True

    @property
    def metric(self) -> str:
        """The headline metric run.json declares (`headline_metric`; folders of earlier moot
        versions: the scenario's `metric`), never guessed from a file name; else macro-F1."""
        return self.record.headline or "macro_f1"

    @property
    def metric_source(self) -> str:
        return f"{self.metric} (run.json)" if self.record.headline else "macro_f1 (not declared in run.json)"

    @property
    def skipped(self) -> dict[str, int]:
        """Dataset rows the loader skipped, by reason (run.json `skipped_rows`)."""
        return dict(self.record.skipped_rows or {})

    @property
    def rescored(self) -> str:
        found = self.record.rescored
        if not found:
            return ""
        roles = ", ".join(f"{k}={v}" for k, v in (found.roles or {}).items())
        return f"rescored from {found.from_ or '?'} ({roles})"

    # --- what came out ------------------------------------------------------------------
    @cached_property
    def scored(self) -> list[ResultRow]:
        return [r for r in self.results if r.gold is not None]

    @property
    def planned(self) -> Optional[int]:
        return self.record.planned

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
        return sum(1 for r in self.results if r.prediction not in set(self.labels))

    @property
    def date(self) -> str:
        return run_dates(self.source)

    def rows_of(self, target: Optional[str] = None) -> list[ResultRow]:
        """Its scored results (of one target)."""
        rows = [r for r in self.scored if target is None or self.targets.get(r.id) == target]
        if not rows:
            raise RunError(f"{self.path}: no scored results" + (f" for target {target!r}" if target else ""))
        return rows

    def report(self, target: Optional[str] = None) -> MetricReport:
        gold, predictions = gold_and_predictions(self.rows_of(target))
        metric = self.metric if self.by_headline else "macro_f1"
        return summarize(gold, predictions, self.labels, metric=metric)

    @cached_property
    def resampling(self) -> Resampling:
        return Resampling(stats.RESAMPLES, stats.SEED)

    def interval(self, metric: str, target: Optional[str] = None) -> stats.Interval:
        """`metric` over its scored items (of one target) with the 95% percentile bootstrap interval
        over items an experiment's report gives a single repeat (moot.experiment.analysis: same
        draws), flagged under `stats.FEW_ITEMS` items; `metric` as moot.metrics.coded names it."""
        gold, predictions = gold_and_predictions(self.rows_of(target))
        run = features(gold, predictions, self.labels)
        draws = score(self.resampling.counts(target, run), metric, self.labels)
        return stats.percentile_interval(value(run, metric, self.labels), draws, len(gold), self.resampling.resamples,
                                         self.resampling.seed)

    def value(self, metric: str) -> float:
        """One classification metric over all its scored items (moot.metrics.classification)."""
        return value_of(self.report(), metric, self.labels)

    def target_values(self) -> list[str]:
        return sorted({self.targets[r.id] for r in self.scored if r.id in self.targets})


def gold_and_predictions(rows: list[ResultRow]) -> tuple[list[str], list[Optional[str]]]:
    """The gold labels and predictions of scored rows, side by side."""
    return [str(r.gold) for r in rows], [r.prediction for r in rows]


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
    created = source.record.created or "≈" + stamp(min(files, key=lambda f: f.stat().st_mtime))
    last = source.path / "results.jsonl" if (source.path / "results.jsonl").is_file() else \
        max(files, key=lambda f: f.stat().st_mtime)
    return f"{created} .. {stamp(last)}"


def protocol_of(source: RunSource) -> str:
    """Its protocol: run.json's, else its first transcript's."""
    found = source.record.protocol_name
    if found:
        return found
    return source.units[0].load().protocol if source.units else "?"


def row_of(unit: UnitRef, transcript: Transcript) -> Optional[ResultRow]:
    """A transcript file's one unit's results row, from its `outcome` event (None: it did not finish)."""
    found = transcript.outcome
    if found is None:
        return None
    return ResultRow(id=unit.id, prediction=found.prediction, gold=found.gold, transcript=str(unit.path))
