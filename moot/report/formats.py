"""One table, three formats: Markdown (report.md, the terminal), CSV and LaTeX (a paper's source).

A `Grid` is a title, a head, rows of cells and notes (the methods under the table). A cell is its
text as shown (Markdown, LaTeX, the viewer); a `Cell` also carries the numbers behind the text,
which CSV writes one to a column (a column's CSV columns: `Grid.columns`), so a CSV holds numbers
with its interval's ends, n, a p's test and a flag each in a column of their own, never
"[0.1, 0.3]" or "0.02 (paired_t)". Every text goes through its format's neutralising step
(moot.safety.neutral), since arm, dataset, target and model names are what a user or a dataset
wrote: inert Markdown, CSV cells that no spreadsheet runs as a formula, LaTeX with every special
character escaped.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from functools import partial

from moot.safety.neutral import csv_safe, latex_safe, markdown_safe

_cell = partial(markdown_safe, cell=True)
NONE = "–"  # a cell with nothing to show: empty in CSV


class Cell(str):
    """A cell's text as shown, carrying the values CSV writes for it (one per CSV column of its
    column; a float NaN or None: empty)."""

    values: tuple[object, ...]

    def __new__(cls, text: str, *values: object) -> "Cell":
        made = super().__new__(cls, text)
        made.values = values
        return made


@dataclass(frozen=True)
class Grid:
    title: str
    head: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = field(default=())
    key: str = "table"  # file names
    columns: tuple[tuple[str, ...], ...] = field(default=())  # each head column's CSV columns (none: its head)

    def csv_head(self) -> tuple[tuple[str, ...], ...]:
        return self.columns or tuple((h,) for h in self.head)


def markdown(grid: Grid) -> str:
    lines = ["| " + " | ".join(map(_cell, grid.head)) + " |", "|" + "---|" * len(grid.head)]
    lines += ["| " + " | ".join(map(_cell, row)) + " |" for row in grid.rows]
    notes = "\n".join(f"\n{markdown_safe(n)}" for n in grid.notes)
    return f"**{_cell(grid.title)}**\n\n" + "\n".join(lines) + ("\n" + notes if notes else "")


def to_csv(grid: Grid) -> str:
    """The grid's numbers: each column as its CSV columns, a `Cell` as its values, other text as
    shown (`NONE`, and text in a column of several, as empty cells)."""
    head = grid.csv_head()
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(map(csv_safe, (name for names in head for name in names)))
    writer.writerows([csv_safe(v) for cell, names in zip(row, head) for v in csv_values(cell, len(names))]
                     for row in grid.rows)
    return out.getvalue()


def csv_values(cell: str, width: int) -> tuple[object, ...]:
    if isinstance(cell, Cell):
        if len(cell.values) != width:
            raise ValueError(f"cell {cell!r} has {len(cell.values)} values for {width} CSV columns")
        return tuple("" if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in cell.values)
    return ("" if cell == NONE else cell,) if width == 1 else ("",) * width


def latex(grid: Grid) -> str:
    """A booktabs table (\\usepackage{booktabs}); notes as a footnote-size paragraph below it."""
    spec = "l" + "r" * (len(grid.head) - 1)
    body = [" & ".join(map(latex_safe, row)) + r" \\" for row in grid.rows]
    notes = [r"\par\footnotesize " + latex_safe(n) for n in grid.notes]
    return "\n".join([r"\begin{table}[t]", r"\centering", rf"\caption{{{latex_safe(grid.title)}}}",
                      rf"\begin{{tabular}}{{{spec}}}", r"\toprule", " & ".join(map(latex_safe, grid.head)) + r" \\",
                      r"\midrule", *body, r"\bottomrule", r"\end{tabular}", *notes, r"\end{table}", ""])
