"""The tables of an experiment's report, as Grids (moot.report.formats: Markdown, CSV, LaTeX).

- `arms_grid`: every arm on one column: mean, its intervals over repeats and over items, seed and
  item spread, and Δ against the reference with its interval, p (raw and Holm), MDE and pairing;
- `published_grid`: each arm beside the paper's figure of the row it reproduces: measured (with
  the paper's significance mark where its rule, applied to these runs, gives it) | published | Δ,
  on the paper's scale (a percent table in percent), with where the paper prints it and the items
  measured beside the paper's count (a table that declares it: `items`). A column is
  measured over items (an arm's analysis: `measured_of`) or once per run of a scenario (a
  protocol's measure or one step of its series, averaged over seeds: `measured_over_runs`).

A mark follows a rule (`RULES`): `paper`, the paper's own as published.yaml records it (the marked
row's arm against the best arm of the table's other rows, the paper's test and its raw or adjusted
p); `strict`, against the best measured arm of all, Holm-adjusted. A test silent on these runs (a
paired t-test without varying repeats) gives way to the comparison's own (the paired bootstrap of
the column's metric), and the table names the tests used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from moot.experiment.analysis import METHODS, TEST_NAMES, Analysis, ArmStat, Column, Comparison
from moot.metrics import stats
from moot.report.formats import NONE, Cell, Grid
from moot.report.published import Published, items_line

DASH = NONE


def number(value: float, percent: bool = False, digits: int = 3) -> Cell:
    """A value as shown (a percent table's in percent) and, for CSV, on the same scale unrounded."""
    if value is None or math.isnan(value):
        return Cell(DASH, None)
    return Cell(f"{100 * value:.1f}", 100 * value) if percent else Cell(f"{value:.{digits}f}", value)


def signed(value: float, percent: bool = False, digits: int = 3) -> Cell:
    text = number(value, percent, digits)
    return text if text == DASH or text.startswith("-") else Cell("+" + text, *text.values)


def span(name: str) -> tuple[str, ...]:
    """The CSV columns of an interval's cell (`interval`): its ends and its flags or why it is none."""
    return f"{name}_low", f"{name}_high", f"{name}_flags"


def interval(found: stats.Interval, percent: bool = False, digits: int = 3) -> Cell:
    """The interval with its flags (too few repeats or items, clipped); none: why (one repeat, repeats
    or items that do not vary: a zero-width interval would say more than the data).
    CSV: low, high and the flags (or why there is none) apart (`span`)."""
    if math.isnan(found.low):
        return Cell(found.note or DASH, None, None, found.note or None)
    flags = "; ".join(found.flags)
    if found.note and found.low == found.high:  # every draw alike (no variation across items): its reason
        return Cell(f"{found.note} ({flags})" if flags else found.note, None, None,
                    "; ".join(filter(None, (found.note, flags))))
    low, high = number(found.low, percent, digits), number(found.high, percent, digits)
    shown = f"[{low}, {high}]"
    return Cell(f"{shown} ({flags})" if flags else shown, *low.values, *high.values, flags or None)


def pvalue(p: float) -> Cell:
    if p is None or math.isnan(p):
        return Cell(DASH, None)
    return Cell("<0.001" if p < 0.001 else f"{p:.3f}", p)


TESTED = ("p", "test", "p_note")  # the CSV columns of `tested`


def tested(c: Comparison) -> Cell:
    """A comparison's p with its test named, and why the paired t-test is silent when it is; CSV:
    p, the test and the note apart (`TESTED`)."""
    shown = f"{pvalue(c.pvalue)} ({c.primary})" if not math.isnan(c.pvalue) else f"{c.test.note or DASH} ({c.primary})"
    silent = c.primary != "paired_t" and c.paired_t.note == stats.NO_VARIANCE
    note = f"paired_t: {stats.NO_VARIANCE}" if silent else (c.test.note if math.isnan(c.pvalue) else "")
    return Cell(f"{shown}; {note}" if silent else shown, c.pvalue, c.primary, note or None)


def headline(stat: ArmStat) -> stats.Interval:
    """The interval a table shows first: over repeats when there are two or more, else over items."""
    return stat.over_repeats if len(stat.values) > 1 else stat.over_items


def model_title(models: Mapping[str, str], axis: str) -> str:
    """The model a table's title names: the one every arm's runs used, else `each arm's own
    models` (named on its row or in a note); no models known: the model axis's value."""
    found = set(models.values())
    if len(found) == 1:
        return found.pop()
    return "each arm's own models" if found else axis


def arms_grid(analysis: Analysis, labels: Optional[Mapping[str, str]] = None,
              models: Optional[Mapping[str, str]] = None) -> Grid:
    """`models`: each arm's models (as its runs' run.json name them; default: the analysis's)."""
    reference = analysis.comparisons[0].reference if analysis.comparisons else None
    models = models or {}
    head = ("arm", "model", "repeats", "items", "mean", "95% CI (repeats)", "95% CI (items)", "seed sd", "item se",
            f"Δ = arm − {reference}" if reference else "Δ", "95% CI (Δ)", "p", "p (Holm)", "MDE", "paired / dropped")
    rows = []
    for stat in analysis.arms:
        c = analysis.comparison(stat.arm)
        cmp_cells = (signed(c.delta.estimate), interval(c.delta), tested(c), pvalue(c.adjusted),
                     number(c.mde.estimate), Cell(f"{c.paired} / {c.dropped}", c.paired, c.dropped)) if c else \
            (Cell("reference", None) if stat.arm == reference else DASH, DASH, DASH, DASH, DASH, DASH)
        label = (labels or {}).get(stat.arm, stat.arm)
        name = Cell(label + (" †" if stat.partial else ""), label, stat.partial)
        rows.append((name, models.get(stat.arm, analysis.model), str(len(stat.values)), str(stat.items),
                     number(stat.mean), interval(stat.over_repeats), interval(stat.over_items),
                     number(stat.spread.seed_sd), number(stat.spread.item_se), *cmp_cells))
    title = f"{analysis.column.name} · {model_title(models, analysis.model)}"
    notes = (*METHODS, *analysis.notes) + (("† computed from a partial run.",) if any(s.partial for s in analysis.arms)
                                          else ())
    return Grid(title, head, tuple(rows), notes, key="arms", columns=ARMS_CSV)


ARMS_CSV = (("arm", "partial"), ("model",), ("repeats",), ("items",), ("mean",), span("ci_repeats"), span("ci_items"),
            ("seed_sd",), ("item_se",), ("delta",), span("ci_delta"), TESTED, ("p_holm",), ("mde",),
            ("paired", "dropped"))


@dataclass(frozen=True)
class Measured:
    """One arm's measured cell of a published column: its mean, the interval a table shows first,
    how many items (None: the units are runs of a scenario) and runs, the paper's mark if due, and
    the models its runs used."""

    mean: float
    interval: stats.Interval
    items: Optional[int]
    runs: int
    mark: str = ""
    tested: str = ""  # the test whose p decided the mark (none: no rule, or no comparison)
    model: str = ""  # the models its runs used (run.json `models`)


ByModel = Mapping[str, Mapping[str, Mapping[str, Measured]]]  # model axis -> published column -> arm -> cell
RULES = ("paper", "strict")


def _p(analysis: Analysis, found: Comparison, test: str, holm: bool) -> float:
    """`found`'s p under `test`, raw or Holm-adjusted over the arms compared with the reference."""
    if not holm:
        return float(getattr(found, test).pvalue)
    adjusted = stats.holm([getattr(c, test).pvalue for c in analysis.comparisons])
    return adjusted[analysis.comparisons.index(found)]


def _mark(analysis: Analysis, arm: str, published: Published, rows: Mapping[str, str], rule: str) -> tuple[str, str]:
    """The mark on `arm`'s cell under `rule` (module docstring) and the test that decided it."""
    paper = published.spec.significance
    mine = analysis.arm(arm)
    if paper is None or rows.get(arm) != paper.row or mine is None or not analysis.comparisons \
            or analysis.comparisons[0].reference != arm:
        return "", ""
    others = [s for s in analysis.arms if s.arm != arm and (rule == "strict" or s.arm in rows)]
    best = max(others, key=lambda s: s.mean) if others else None
    found = analysis.comparison(best.arm) if best is not None else None
    if best is None or found is None:
        return "", ""
    wanted = found.primary if rule == "strict" else paper.test
    test = wanted if not math.isnan(getattr(found, wanted).pvalue) else found.primary
    p = _p(analysis, found, test, rule == "strict" or paper.adjustment == "holm")
    wins = mine.mean > best.mean and stats.significant(p, paper.alpha)
    return (paper.mark if wins else ""), test


def measured_of(analysis: Analysis, published: Published, rows: Optional[Mapping[str, str]] = None,
                rule: str = "paper", models: Optional[Mapping[str, str]] = None) -> dict[str, Measured]:
    """Each arm's cell of a published column measured over items (with its mark under `rule`;
    `rows`: arm -> the paper's row; `models`: each arm's models, default the analysis's)."""
    return {s.arm: Measured(s.mean, headline(s), s.items, len(s.values),
                            *_mark(analysis, s.arm, published, rows or {}, rule),
                            (models or {}).get(s.arm, analysis.model)) for s in analysis.arms}


def marks_note(published: Published, measured: ByModel, rows: Mapping[str, str], rule: str) -> str:
    """What a mark means in the paper, the rule applied here and the tests that decided it (or that
    the paper marks none)."""
    paper = published.spec.significance
    if paper is None:
        return "Significance: the paper marks none in this table, so none is marked here."
    meaning = published.spec.marks.get(paper.mark, "")
    if rule == "strict":
        how = (f"the strict rule: the arm of row {paper.row} against the best measured arm of all, "
               f"Holm-adjusted p < {paper.alpha}")
    else:
        baselines = ", ".join(sorted(r for r in rows.values() if r != paper.row)) or "none mapped"
        how = (f"the paper's rule ({paper.where}): the arm of row {paper.row} against the best arm of the table's "
               f"other rows measured here ({baselines}), {'raw' if paper.adjustment == 'none' else 'Holm-adjusted'} "
               f"p < {paper.alpha}, {paper.test}")
    used = sorted({c.tested for by in measured.values() for cells in by.values() for c in cells.values() if c.tested})
    tests = "; ".join(f"{t}: {TEST_NAMES[t]}" for t in used)
    return f"{paper.mark}: {meaning}. Here {how}" + (f". Tests used: {tests}." if tests else ".")


def measured_over_runs(values: Mapping[str, Sequence[float]], models: Mapping[str, str]) -> dict[str, Measured]:
    """Each arm's cell of a published column measured once per run (seed): the mean over runs with
    its t interval."""
    found = {arm: stats.t_interval(v) for arm, v in values.items() if v}
    return {arm: Measured(i.estimate, i, None, i.n, model=models.get(arm, "")) for arm, i in found.items()}


def published_grid(measured: ByModel, published: Published, rows: Mapping[str, str], arms: Sequence[str],
                   labels: Optional[Mapping[str, str]] = None, rule: str = "paper") -> Grid:
    """`measured`: per value of the model axis, by published column name, each arm's cell; `rows`:
    arm -> the paper's row; `rule`: the marks' (module docstring). Each row names the paper's model
    and the measured one."""
    spec = published.spec
    percent = spec.unit == "percent"
    digits = 2 if spec.unit in ("score", "count") else 3  # a mean of 1-10 grades or of counts
    head = ("paper row", "paper's model", "arm", "measured model", "column", "measured", "95% CI", "n items", "runs",
            "published", "Δ (measured - published)")
    body = []
    measured_columns = [c for c in spec.columns if any(by.get(c.name) for by in measured.values())]
    unmeasured = [c.name for c in spec.columns if c not in measured_columns]
    for arm in arms:
        row = rows.get(arm)
        if row is None:
            continue
        for column in measured_columns:
            figure = published.figure(row, column.name)
            cells: list[tuple[str, Optional[Measured]]] = [
                (axis, by[column.name][arm]) for axis, by in sorted(measured.items()) if arm in by.get(column.name, {})]
            for axis, cell in cells or [(DASH, None)]:
                mean = number(cell.mean, percent, digits) if cell else Cell(DASH, None)
                found = (cell.model or axis, Cell(mean + cell.mark, *mean.values, cell.mark or None),
                         interval(cell.interval, percent, digits), DASH if cell.items is None else str(cell.items),
                         str(cell.runs)) if cell else (DASH,) * 5
                delta = signed(cell.mean - figure.value, percent, digits) if cell and figure else DASH
                body.append((row, spec.model or row, (labels or {}).get(arm, arm), found[0], column.name, *found[1:],
                             Cell(figure.printed, figure.digits, figure.mark or None) if figure else DASH, delta))
    marks = marks_note(published, measured, rows, rule)
    over_runs = any(c.metric is None for c in measured_columns)
    items = items_line(spec.items, (cell.items for by in measured.values() for column in measured_columns
                                    for cell in by.get(column.name, {}).values() if cell.items is not None))
    notes = (f"Published: {spec.paper}, {spec.where}; model {spec.model or 'as in the paper'}; "
             f"runs averaged: {spec.runs_averaged if spec.runs_averaged is not None else 'not stated'}.",
             *([items] if items else []), marks, *([spec.note] if spec.note else []),
             "95% CI: over repeats (t) with two or more repeats, else over items (percentile bootstrap)."
             + (" A column of runs (n items –): the mean over runs (seeds) with its t interval (none from one run)."
                if over_runs else ""),
             *([f"Not measured here (no unit of their data, or no run with the measure): {', '.join(unmeasured)}."]
               if unmeasured else []))
    scale = " (percent)" if percent else ""
    return Grid(f"{spec.id}: {spec.title}, measured beside published{scale}", head, tuple(body), notes,
                key="published", columns=PUBLISHED_CSV)


PUBLISHED_CSV = (("paper_row",), ("paper_model",), ("arm",), ("measured_model",), ("column",), ("measured", "mark"),
                 span("ci"), ("n_items",), ("runs",), ("published", "published_mark"), ("delta",))


def published_columns(published: Published) -> dict[str, Column]:
    """The analysis column each published column of items asks for (a metric over a dataset)."""
    return {c.name: Column(c.dataset, c.metric, c.target) for c in published.spec.columns
            if c.metric is not None and c.dataset is not None}
