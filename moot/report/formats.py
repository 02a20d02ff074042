"""One table, three formats: Markdown (report.md, the terminal), CSV and LaTeX (a paper's source).

A `Grid` is a title, a head, rows of text cells and notes (the methods under the table). Cells are
text as shown; every text goes through its format's neutralising step (moot.safety.neutral), since
arm, dataset, target and model names are what a user or a dataset wrote: inert Markdown, CSV cells
that no spreadsheet runs as a formula, LaTeX with every special character escaped.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from functools import partial

from moot.safety.neutral import csv_safe, latex_safe, markdown_safe

_cell = partial(markdown_safe, cell=True)


@dataclass(frozen=True)
class Grid:
    title: str
    head: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = field(default=())
    key: str = "table"  # file names


def markdown(grid: Grid) -> str:
    lines = ["| " + " | ".join(map(_cell, grid.head)) + " |", "|" + "---|" * len(grid.head)]
    lines += ["| " + " | ".join(map(_cell, row)) + " |" for row in grid.rows]
    notes = "\n".join(f"\n{markdown_safe(n)}" for n in grid.notes)
    return f"**{_cell(grid.title)}**\n\n" + "\n".join(lines) + ("\n" + notes if notes else "")


def to_csv(grid: Grid) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(map(csv_safe, grid.head))
    writer.writerows(map(csv_safe, row) for row in grid.rows)
    return out.getvalue()


def latex(grid: Grid) -> str:
    """A booktabs table (\\usepackage{booktabs}); notes as a footnote-size paragraph below it."""
    spec = "l" + "r" * (len(grid.head) - 1)
    body = [" & ".join(map(latex_safe, row)) + r" \\" for row in grid.rows]
    notes = [r"\par\footnotesize " + latex_safe(n) for n in grid.notes]
    return "\n".join([r"\begin{table}[t]", r"\centering", rf"\caption{{{latex_safe(grid.title)}}}",
                      rf"\begin{{tabular}}{{{spec}}}", r"\toprule", " & ".join(map(latex_safe, grid.head)) + r" \\",
                      r"\midrule", *body, r"\bottomrule", r"\end{tabular}", *notes, r"\end{table}", ""])
