"""Reports over finished batch runs: paper-style tables, per-class breakdowns, confusion
matrices and plots, computed only from each run's results.jsonl (see moot.report.build).

`build_report` is imported on first use: reading runs (moot.report.runs) does not load the
plotting library."""

from __future__ import annotations

__all__ = ["build_report"]


def __getattr__(name: str) -> object:
    if name == "build_report":
        from moot.report.build import build_report

        return build_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
