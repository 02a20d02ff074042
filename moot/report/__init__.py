"""Reports over finished batch runs: paper-style tables, per-class breakdowns, confusion
matrices and plots, computed only from each run's results.jsonl (see moot.report.build)."""

from moot.report.build import build_report

__all__ = ["build_report"]
