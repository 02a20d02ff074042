"""A finished (or partial) batch run directory, read back for a report; nothing is re-run.

Numbers come only from `results.jsonl` (gold and prediction of each finished item). `run.json`
says what was run (model specs, scenario and dataset hashes, planned item count, date); a run
with fewer results than planned items, or with items whose transcript ended in failure, is
partial. An item's target (for per-target columns) is read from its transcript's first event.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Optional

from moot.metrics import UNPARSED, MetricReport, rumor_f1, summarize
from moot.runs.folder import read_results, transcript_of

RUMOR_LABELS = ({"fake", "real"}, {"rumor", "non-rumor"})


class RunError(ValueError):
    """Not a batch run directory (no run.json / results.jsonl), or no scored result."""


@dataclass
class Run:
    path: Path
    meta: dict
    results: list[dict]
    ref: str = ""
    targets: dict[str, str] = field(default_factory=dict)

    # --- what was run -------------------------------------------------------------------
    @property
    def protocol(self) -> str:
        return self.meta.get("protocol") or self.meta.get("scenario", {}).get("protocol") or "?"

    @property
    def scenario_fields(self) -> dict:
        return self.meta.get("scenario") or {}

    @property
    def variant(self) -> str:
        if self.protocol == "judge_eval":
            return f"judge-eval {self.meta.get('task', '?')}"
        path = self.meta.get("scenario_path")
        return Path(path).stem if path else self.protocol

    @property
    def model(self) -> str:
        models = self.meta.get("models") or {}
        if set(models) <= {"default"}:
            return models.get("default", "?")
        return ", ".join(f"{k}={v}" for k, v in sorted(models.items()))

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
    def kind(self) -> str:
        """judge (acc + macro-F1), rumor (acc, macro-F1, RF1, NF1) or single (one metric)."""
        if self.protocol == "judge_eval":
            return "judge"
        if self.protocol == "s2mad" or set(self.labels) in RUMOR_LABELS:
            return "rumor"
        return "single"

    @property
    def metric(self) -> str:
        """The headline metric of a single-metric run, as the batch run printed it (run.json
        `headline_metric`); older runs: the metric they declared, else macro-F1 (never guessed
        from the dataset's name)."""
        return self.meta.get("headline_metric") or self.meta.get("metric") or "macro_f1"

    # --- what came out ------------------------------------------------------------------
    @cached_property
    def scored(self) -> list[dict]:
        return [r for r in self.results if r.get("gold") is not None]

    @property
    def planned(self) -> Optional[int]:
        return self.meta.get("planned_items")

    @cached_property
    def failed(self) -> int:
        """Items with a transcript but no result (their last run ended in failure)."""
        folder = self.path / "transcripts"
        if not folder.is_dir():
            return 0
        done = {Path(r.get("transcript", "")).name for r in self.results}
        return sum(1 for p in folder.glob("*.jsonl") if p.name not in done)

    @property
    def partial(self) -> bool:
        return (self.planned is not None and len(self.results) < self.planned) or self.failed > 0

    @property
    def status(self) -> str:
        if self.planned is None:
            return "partial" if self.failed else "unknown plan (run.json lacks planned_items)"
        if not self.partial:
            return "complete"
        more = f", {self.failed} failed or cut short" if self.failed else ""
        return f"partial ({len(self.results)} of {self.planned} items{more})"

    @property
    def unparsed(self) -> int:
        return sum(1 for r in self.results if r.get("prediction") not in set(self.labels))

    @property
    def date(self) -> str:
        """`FIRST .. LAST` (UTC): the first invocation (run.json `created`) to the last result
        written. A run dir made before run.json recorded dates gets its first date from the
        oldest file it holds, marked `≈` (an estimate)."""
        def stamp(path: Path) -> str:
            return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")

        results = self.path / "results.jsonl"
        created = self.meta.get("created")
        if not created:
            files = [results, self.path / "run.json", *(self.path / "transcripts").glob("*.jsonl")]
            created = "≈" + stamp(min((f for f in files if f.is_file()), key=lambda f: f.stat().st_mtime))
        return f"{created} .. {stamp(results)}"

    def report(self, target: Optional[str] = None) -> MetricReport:
        rows = [r for r in self.scored if target is None or self.targets.get(str(r["id"])) == target]
        if not rows:
            raise RunError(f"{self.path}: no scored results" + (f" for target {target!r}" if target else ""))
        metric = self.metric if self.kind == "single" else "macro_f1"
        return summarize([r["gold"] for r in rows], [r["prediction"] for r in rows], self.labels, metric=metric)

    def rumor_scores(self) -> tuple[float, float]:
        """(RF1, NF1): the rumor class is fake / rumor, the non-rumor class real / non-rumor."""
        rumor, non = ("fake", "real") if "fake" in self.labels else ("rumor", "non-rumor")
        return rumor_f1([r["gold"] for r in self.scored], [r["prediction"] for r in self.scored], rumor, non)

    def target_values(self) -> list[str]:
        return sorted({self.targets[str(r["id"])] for r in self.scored if str(r["id"]) in self.targets})


def _target_of(run_dir: Path, row: dict) -> Optional[str]:
    """The item's target from its transcript's `item_started` event (None if not recorded)."""
    recorded = Path(row.get("transcript", ""))
    for path in (recorded, run_dir / "transcripts" / recorded.name):
        if path.is_file():
            with open(path, encoding="utf-8") as f:
                first = f.readline()
            try:
                return (json.loads(first).get("inputs") or {}).get("target")
            except ValueError:
                return None
    return None


def load_run(path: Path, ref: str = "") -> Run:
    meta_path, results_path = path / "run.json", path / "results.jsonl"
    if not meta_path.is_file() or not results_path.is_file():
        raise RunError(f"{path}: not a batch run directory (needs run.json and results.jsonl)")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    results = list(read_results(path).values())
    run = Run(path, meta, results, ref)
    if not run.scored:
        raise RunError(f"{path}: no result with a gold label to score")
    targets = {str(r["id"]): _target_of(path, r) for r in results}
    run.targets = {k: v for k, v in targets.items() if v}
    return run
