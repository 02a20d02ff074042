"""PNG plots of a report (matplotlib, Agg backend: no display needed).

- confusion matrix per run (rows = gold, columns = predicted + unparsed);
- per-dataset bars comparing the rows (variants / models) of a main table, one group per column
  (targets, or metrics);
- S2MAD (Zhang et al. Fig. 2): accuracy and macro-F1 against debate rounds, for runs that differ
  only in `rounds`;
- S2MAD (Fig. 3): macro-F1 at early-detection checkpoints (`early.first_n` / `early.before_s`),
  for runs that differ only in `early`; the run on all comments is drawn as a dashed line.
Runs are grouped by dataset, model and every other scenario field, so a curve never mixes them.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from moot.metrics.classification import UNPARSED  # noqa: E402
from moot.report.runs import Run  # noqa: E402
from moot.report.tables import Table  # noqa: E402


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:60] or "x"


def _title(ax, text: str, fontsize: float = 9) -> None:
    """A title wrapped to the axes' width, so it is never clipped at the figure's edges."""
    inches = ax.figure.get_figwidth() * ax.get_position().width
    chars = max(20, int(inches * 72 / (0.6 * fontsize)))  # average glyph ~0.6 em
    ax.set_title("\n".join(textwrap.wrap(text, chars)), fontsize=fontsize)


def _tick(column: str, dataset: str, columns: list[str]) -> str:
    """A bar group's label: the column without the dataset's name; its overall column (the
    dataset's own, e.g. `semeval2016 (F_avg)`) reads `all targets (F_avg)`, long ones wrap."""
    rest = column.removeprefix(dataset)
    if rest.startswith(" ("):  # the dataset-wide cell of a single-metric table
        rest = ("all targets" if len(columns) > 1 else "all items") + rest
    return "\n".join(textwrap.wrap(rest.lstrip(": ") or dataset, 28))


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def confusion_plot(run: Run, folder: Path) -> Path:
    matrix = run.report().confusion
    cols = [*run.labels, UNPARSED]
    values = [[matrix[g][c] for c in cols] for g in run.labels]
    fig, ax = plt.subplots(figsize=(1.3 * len(cols) + 2, 1.1 * len(run.labels) + 1.6))
    ax.imshow(values, cmap="Blues")
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right")
    ax.set_yticks(range(len(run.labels)), run.labels)
    for i, line in enumerate(values):
        for j, v in enumerate(line):
            ax.text(j, i, str(v), ha="center", va="center")
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    partial = " (partial)" if run.partial else ""
    _title(ax, f"{run.ref} {run.variant} · {run.model} — {run.dataset}, n={len(run.scored)}{partial}")
    return _save(fig, folder / f"confusion_{run.ref}.png")


def bar_plots(table: Table, folder: Path) -> list[Path]:
    """One grouped bar chart per dataset of a table: groups = its columns, bars = rows."""
    written = []
    for dataset, columns in table.datasets.items():
        rows = [r for r in table.rows if any(c in r.cells for c in columns)]
        fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(columns) * max(1, len(rows)) / 2 + 3), 4))
        width = 0.8 / max(1, len(rows))
        for k, row in enumerate(rows):
            xs = [i + k * width for i, c in enumerate(columns) if c in row.cells]
            ys = [row.cells[c] for c in columns if c in row.cells]
            label = row.name + (" (partial)" if row.partial & set(columns) else "")
            ax.bar(xs, ys, width, label=label)
        ticks = [_tick(c, dataset, columns) for c in columns]
        ax.set_xticks([i + width * (len(rows) - 1) / 2 for i in range(len(columns))], ticks,
                      rotation=30, ha="right", fontsize=8)
        ax.set_ylim(0, 1)
        _title(ax, f"{dataset}: {table.title}")
        ax.legend(fontsize=7)
        name = f"{table.kind}_{_slug(dataset)}" if table.key in ("", table.kind) else _slug(table.key)
        written.append(_save(fig, folder / f"bars_{name}.png"))
    return written


def _group_key(run: Run, without: str) -> str:
    fields = {k: v for k, v in run.scenario_fields.items() if k not in (without, "title")}
    return json.dumps([run.dataset, run.model, fields], sort_keys=True)


def _groups(runs: list[Run], without: str) -> dict[str, list[Run]]:
    groups: dict[str, list[Run]] = {}
    for run in runs:
        if run.protocol == "s2mad" and run.scenario_fields:
            groups.setdefault(_group_key(run, without), []).append(run)
    return groups


def rounds_plots(runs: list[Run], folder: Path) -> list[Path]:
    written = []
    plain = [r for r in runs if not any((r.scenario_fields.get("early") or {}).values())]
    for n, group in enumerate(_groups(plain, "rounds").values()):
        by_rounds = sorted(group, key=lambda r: r.scenario_fields.get("rounds", 0))
        if len({r.scenario_fields.get("rounds") for r in by_rounds}) < 2:
            continue
        xs = [r.scenario_fields.get("rounds") for r in by_rounds]
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.plot(xs, [r.report().accuracy for r in by_rounds], marker="o", label="accuracy")
        ax.plot(xs, [r.report().macro_f1 for r in by_rounds], marker="s", label="macro-F1")
        ax.set_xlabel("debate rounds M")
        ax.set_xticks(xs)
        ax.set_ylim(0, 1)
        first = by_rounds[0]
        partial = " (partial runs)" if any(r.partial for r in by_rounds) else ""
        _title(ax, f"S2MAD rounds sweep: {first.dataset} · {first.model}{partial}")
        ax.legend(fontsize=8)
        written.append(_save(fig, folder / f"s2mad_rounds_{n + 1}.png"))
    return written


def _checkpoint(run: Run) -> tuple[str, float] | None:
    early = run.scenario_fields.get("early") or {}
    if early.get("first_n") is not None:
        return "first_n", float(early["first_n"])
    if early.get("before_s") is not None:
        return "before_s", float(early["before_s"])
    return None


def early_plots(runs: list[Run], folder: Path) -> list[Path]:
    written = []
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
            _title(ax, f"S2MAD early detection: {group[0].dataset} · {group[0].model}{partial}")
            ax.legend(fontsize=8)
            written.append(_save(fig, folder / f"s2mad_early_{n + 1}_{axis}.png"))
    return written
