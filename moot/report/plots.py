"""PNG plots of a report (matplotlib, Agg backend: no display needed).

- confusion matrix per run (rows = gold, columns = predicted + unparsed);
- per-dataset bars comparing the rows (variants / models) of a main table, one group per column
  (targets, or metrics), each with its 95% interval over items as error bars and n in the legend.
A protocol's own plots (e.g. S2MAD's rounds and early-detection curves) come from its report hook
(moot.contract.report). Every plot, these and the protocols', is titled and written by the kit's
`title` and `save` (moot.kit.plots), which neutralise every text of the figure first.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Sequence

from moot.kit.plots import save, title  # first: it sets matplotlib up (Agg, no mathtext)

import matplotlib.pyplot as plt  # noqa: E402

from moot.metrics.classification import UNPARSED  # noqa: E402
from moot.report.runs import Run  # noqa: E402
from moot.report.tables import Row, Table  # noqa: E402


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:60] or "x"


def _tick(column: str, dataset: str, columns: list[str]) -> str:
    """A bar group's label: the column without the dataset's name; its overall column (the
    dataset's own, e.g. `semeval2016 (F_avg)`) reads `all targets (F_avg)`, long ones wrap."""
    rest = column.removeprefix(dataset)
    if rest.startswith(" ("):  # the dataset-wide cell of a single-metric table
        rest = ("all targets" if len(columns) > 1 else "all items") + rest
    return "\n".join(textwrap.wrap(rest.lstrip(": ") or dataset, 28))


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
    title(ax, f"{run.ref} {run.variant} · {run.model} — {run.dataset}, n={len(run.scored)}{partial}")
    return save(fig, folder / f"confusion_{run.ref}.png")


def metrics_label(columns: Sequence[str]) -> str:
    """The y axis of a bar chart: the metrics its columns name (`semeval2016: Atheism (f_avg)`)."""
    found = dict.fromkeys(m.group(1) for c in columns for m in [re.search(r"\(([^()]+)\)$", c)] if m)
    return ", ".join(found) or "score"


ERROR_BARS = "error bars: 95% percentile bootstrap over items (none: a cell without one, e.g. kappa)"


def error_bars(row: Row, columns: Sequence[str]) -> list[list[float]]:
    """Below and above each bar: its cell's interval over items (0 where it has none)."""
    found = [row.intervals.get(c) for c in columns]
    return [[max(0.0, row.cells[c] - i.low) if i else 0.0 for c, i in zip(columns, found)],
            [max(0.0, i.high - row.cells[c]) if i else 0.0 for c, i in zip(columns, found)]]


def items_text(row: Row, columns: Sequence[str]) -> str:
    """` (n=40)`: the items its intervals are over, `n=12-40` when its columns' differ (targets)."""
    counts = sorted({row.intervals[c].n for c in columns if c in row.intervals})
    if not counts:
        return ""
    return f" (n={counts[0]})" if len(counts) == 1 else f" (n={counts[0]}-{counts[-1]})"


def bar_plots(table: Table, folder: Path) -> list[Path]:
    """One grouped bar chart per dataset of a table: groups = its columns, bars = rows."""
    written = []
    for dataset, columns in table.datasets.items():
        rows = [r for r in table.rows if any(c in r.cells for c in columns)]
        fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(columns) * max(1, len(rows)) / 2 + 3), 4))
        width = 0.8 / max(1, len(rows))
        for k, row in enumerate(rows):
            shown = [c for c in columns if c in row.cells]
            xs = [columns.index(c) + k * width for c in shown]
            ys = [row.cells[c] for c in shown]
            label = row.name + (" (partial)" if row.partial & set(columns) else "") + items_text(row, shown)
            ax.bar(xs, ys, width, yerr=error_bars(row, shown), capsize=3, label=label)
        ticks = [_tick(c, dataset, columns) for c in columns]
        ax.set_xticks([i + width * (len(rows) - 1) / 2 for i in range(len(columns))], ticks,
                      rotation=30, ha="right", fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_ylabel(metrics_label(columns))
        title(ax, f"{dataset}: {table.title}")
        ax.set_xlabel(ERROR_BARS, fontsize=7, color="#555555")  # under the tick labels, however long
        ax.legend(fontsize=7)
        name = f"{table.kind}_{_slug(dataset)}" if table.key in ("", table.kind) else _slug(table.key)
        written.append(save(fig, folder / f"bars_{name}.png"))
    return written
