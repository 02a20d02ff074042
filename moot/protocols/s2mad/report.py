"""S2MAD's plots in a report (Zhang et al.), from finished runs only:

- Fig. 2: accuracy and macro-F1 against debate rounds, for runs that differ only in `rounds`;
- Fig. 3: macro-F1 at early-detection checkpoints (`early.first_n` / `early.before_s`), for runs
  that differ only in `early`; the run on all comments is drawn as a dashed line.
Runs are grouped by dataset, model and every other scenario field, so a curve never mixes them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from moot.contract.report import ReportPart
from moot.kit.plots import save, title
from moot.kit import RunResults

import matplotlib.pyplot as plt  # noqa: E402 - after moot.kit.plots, which picks the Agg backend


def part(runs: Sequence[RunResults], folder: Path) -> ReportPart:
    """The rounds sweeps and early-detection curves of a report's S2MAD runs."""
    return ReportPart(plots=(*rounds_plots(list(runs), folder), *early_plots(list(runs), folder)))


def _group_key(run: RunResults, without: str) -> str:
    fields = {k: v for k, v in run.scenario_fields.items() if k not in (without, "title")}
    return json.dumps([run.dataset, run.model, fields], sort_keys=True)


def _groups(runs: list[RunResults], without: str) -> dict[str, list[RunResults]]:
    groups: dict[str, list[RunResults]] = {}
    for run in runs:
        if run.scenario_fields:
            groups.setdefault(_group_key(run, without), []).append(run)
    return groups


def _rounds(run: RunResults) -> int:
    return int(run.scenario_fields.get("rounds") or 0)


def rounds_plots(runs: list[RunResults], folder: Path) -> list[Path]:
    written: list[Path] = []
    plain = [r for r in runs if not any((r.scenario_fields.get("early") or {}).values())]
    for n, group in enumerate(_groups(plain, "rounds").values()):
        by_rounds = sorted(group, key=_rounds)
        if len({_rounds(r) for r in by_rounds}) < 2:
            continue
        xs = [_rounds(r) for r in by_rounds]
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.plot(xs, [r.report().accuracy for r in by_rounds], marker="o", label="accuracy")
        ax.plot(xs, [r.report().macro_f1 for r in by_rounds], marker="s", label="macro-F1")
        ax.set_xlabel("debate rounds M")
        ax.set_xticks(xs)
        ax.set_ylim(0, 1)
        first = by_rounds[0]
        partial = " (partial runs)" if any(r.partial for r in by_rounds) else ""
        title(ax, f"S2MAD rounds sweep: {first.dataset} · {first.model}{partial}")
        ax.legend(fontsize=8)
        written.append(save(fig, folder / f"s2mad_rounds_{n + 1}.png"))
    return written


def _checkpoint(run: RunResults) -> tuple[str, float] | None:
    early = run.scenario_fields.get("early") or {}
    if early.get("first_n") is not None:
        return "first_n", float(early["first_n"])
    if early.get("before_s") is not None:
        return "before_s", float(early["before_s"])
    return None


def early_plots(runs: list[RunResults], folder: Path) -> list[Path]:
    written: list[Path] = []
    for n, group in enumerate(_groups(runs, "early").values()):
        points = sorted(((c, r) for r in group if (c := _checkpoint(r)) is not None), key=lambda p: p[0])
        full = [r for r in group if _checkpoint(r) is None]
        for axis in sorted({c[0] for c, _ in points}):
            line = [(c[1], r) for c, r in points if c[0] == axis]
            fig, ax = plt.subplots(figsize=(5, 3.5))
            ax.plot([x for x, _ in line], [r.report().macro_f1 for _, r in line], marker="o", label="checkpoints")
            if full:
                ax.axhline(full[0].report().macro_f1, linestyle="--", color="gray", label="all comments")
            ax.set_xlabel("comments used (first n)" if axis == "first_n" else "comments posted before t (s)")
            ax.set_ylabel("macro-F1")
            ax.set_ylim(0, 1)
            partial = " (partial runs)" if any(r.partial for _, r in line) else ""
            title(ax, f"S2MAD early detection: {group[0].dataset} · {group[0].model}{partial}")
            ax.legend(fontsize=8)
            written.append(save(fig, folder / f"s2mad_early_{n + 1}_{axis}.png"))
    return written
