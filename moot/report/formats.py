"""One table, three formats: Markdown (report.md, the terminal), CSV and LaTeX (a paper's source).

A `Grid` is a title, a head, rows of text cells and notes (the methods under the table). Cells are
text as shown; what a model, a dataset or a user wrote is escaped for each format: Markdown's
pipes and LaTeX's special characters.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
          "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "Δ": r"$\Delta$", "±": r"$\pm$",
          "†": r"\dag{}", "–": "--", "α": r"$\alpha$"}


@dataclass(frozen=True)
class Grid:
    title: str
    head: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = field(default=())
    key: str = "table"  # file names


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(grid: Grid) -> str:
    lines = ["| " + " | ".join(map(_md, grid.head)) + " |", "|" + "---|" * len(grid.head)]
    lines += ["| " + " | ".join(map(_md, row)) + " |" for row in grid.rows]
    notes = "\n".join(f"\n{_md(n)}" for n in grid.notes)
    return f"**{_md(grid.title)}**\n\n" + "\n".join(lines) + ("\n" + notes if notes else "")


def to_csv(grid: Grid) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(grid.head)
    writer.writerows(grid.rows)
    return out.getvalue()


def latex_escape(text: str) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in text)


def latex(grid: Grid) -> str:
    """A booktabs table (\\usepackage{booktabs}); notes as a footnote-size paragraph below it."""
    spec = "l" + "r" * (len(grid.head) - 1)
    body = [" & ".join(map(latex_escape, row)) + r" \\" for row in grid.rows]
    notes = [r"\par\footnotesize " + latex_escape(n) for n in grid.notes]
    return "\n".join([r"\begin{table}[t]", r"\centering", rf"\caption{{{latex_escape(grid.title)}}}",
                      rf"\begin{{tabular}}{{{spec}}}", r"\toprule", " & ".join(map(latex_escape, grid.head)) + r" \\",
                      r"\midrule", *body, r"\bottomrule", r"\end{tabular}", *notes, r"\end{table}", ""])
