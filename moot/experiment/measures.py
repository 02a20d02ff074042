"""Arms whose units are runs of the scenario (a conference): their protocol's measures over seeds.

Each cell is one run per seed; its unit's measures (the protocol's metrics hook: a conference's
share of topics agreed, rounds to agreement, evaluator score, reference coverage) are read through
moot's API. Per arm and measure: the mean over seeds with a 95 % t interval; against the reference,
paired by seed: Δ, the Wilcoxon signed-rank test and the paired t-test, Holm over the arms (on
Wilcoxon's p).

Trajectories (the protocol's `series`: a conference's judge saying AGREEMENT per topic and round,
rounds to agreement, evaluator score and reference coverage per topic): per arm, line and step, the
mean over seeds with a 95 % t interval and the number of seeds that reached the step.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence

from moot.contract.metrics import Point
from moot.experiment.tables import interval, model_title, number, signed, span
from moot.metrics import stats
from moot.report.formats import Cell, Grid

METHOD = ("Mean over seeds with a 95% t interval; Δ = arm - reference paired by seed; p: Wilcoxon signed-rank "
          "test (zero differences dropped), Holm-adjusted over the arms; paired t-test beside it.")


@dataclass(frozen=True)
class MeasureCell:
    arm: str
    model: str
    seed: int
    values: dict[str, float]
    points: dict[str, list[Point]] = field(default_factory=dict)  # series name -> its points
    steps: dict[str, str] = field(default_factory=dict)  # series name -> what a step is


def read_cell(arm: str, model: str, seed: int, folder: Path) -> Optional[MeasureCell]:
    """A finished run-of-the-scenario cell's measures (None: nothing finished)."""
    from moot.api.saved import open_run

    saved = open_run(folder)
    if saved.contract is None or saved.contract.units.items:
        return None
    series = saved.contract.metrics.series
    for unit in saved.units():
        if unit.row is not None:
            values = {k: v for k, v in unit.measures().items() if v is not None}
            record = unit.record()
            return MeasureCell(arm, model, seed, values, {s.name: list(s.of(record)) for s in series},
                               {s.name: s.step for s in series})
    return None


Trajectory = dict[str, list[tuple[int, stats.Interval]]]  # line (arm · group) -> (step, mean over seeds)


def trajectories(cells: Sequence[MeasureCell], series: str, model: str, arms: Sequence[str]) -> Trajectory:
    """Each arm's lines of one series: per group and step, the mean over seeds with a t interval."""
    by_line: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for c in cells:
        if c.model == model:
            for p in c.points.get(series, []):
                by_line[(c.arm, p.group)][p.step].append(p.value)
    order = {a: i for i, a in enumerate(arms)}
    return {f"{arm} · {group}": [(step, stats.t_interval(values)) for step, values in sorted(steps.items())]
            for (arm, group), steps in sorted(by_line.items(), key=lambda kv: (order.get(kv[0][0], 0), kv[0][1]))}


def trajectory_grid(found: Trajectory, series: str, step: str, model: str) -> Grid:
    rows = tuple((line, str(s), str(i.n), number(i.estimate), interval(i))
                 for line, points in found.items() for s, i in points)
    return Grid(f"{series} by {step} · {model}", ("arm · line", step, "seeds", "mean", "95% CI"), rows,
                (f"Mean over the seeds that reached the {step}, 95% t interval over seeds.",), key="trajectory",
                columns=(("line",), (step,), ("seeds",), ("mean",), span("ci")))


def _silent(test: stats.Test) -> Cell:
    """A p, or why the test cannot speak when its repeats do not vary; CSV: p and the note apart."""
    if math.isnan(test.pvalue) and test.note == stats.NO_VARIANCE:
        return Cell(test.note, None, test.note)
    shown = number(test.pvalue)
    return Cell(shown, *shown.values, test.note or None)


def measure_grid(cells: Sequence[MeasureCell], measure: str, model: str, arms: Sequence[str],
                 reference: Optional[str], models: Optional[Mapping[str, str]] = None) -> Optional[Grid]:
    """`model`: the model axis's value; `models`: each arm's models on it (as run.json names them)."""
    by_arm: dict[str, dict[int, float]] = defaultdict(dict)
    for c in cells:
        if c.model == model and measure in c.values:
            by_arm[c.arm][c.seed] = c.values[measure]
    present = [a for a in arms if by_arm.get(a)]
    if not present:
        return None
    tests: dict[str, tuple[float, stats.Test, stats.Test, int]] = {}
    if reference in by_arm:
        ref = by_arm[reference]
        for arm in present:
            if arm == reference:
                continue
            seeds = sorted(set(by_arm[arm]) & set(ref))
            a, b = [by_arm[arm][s] for s in seeds], [ref[s] for s in seeds]
            if seeds:
                tests[arm] = (float(sum(a) / len(a) - sum(b) / len(b)), stats.wilcoxon(a, b), stats.paired_t(a, b),
                              len(seeds))
    adjusted = dict(zip(tests, stats.holm([t[1].pvalue for t in tests.values()])))
    rows = []
    for arm in present:
        values = [by_arm[arm][s] for s in sorted(by_arm[arm])]
        found = stats.t_interval(values)
        t = tests.get(arm)
        rows.append((arm, (models or {}).get(arm, model), str(len(values)), number(found.estimate), interval(found),
                     *((signed(t[0]), number(t[1].pvalue), number(adjusted[arm]), _silent(t[2]), str(t[3])) if t else
                       (Cell("reference", None) if arm == reference else "–", "–", "–", "–", "–"))))
    head = ("arm", "model", "seeds", "mean", "95% CI", f"Δ = arm − {reference}" if reference else "Δ", "p (Wilcoxon)", "p (Holm)",
            "p (paired t)", "paired seeds")
    return Grid(f"{measure} · {model_title(models or {}, model)}", head, tuple(rows), (METHOD,), key="measures",
                columns=(("arm",), ("model",), ("seeds",), ("mean",), span("ci"), ("delta",), ("p_wilcoxon",),
                         ("p_holm",), ("p_paired_t", "p_paired_t_note"), ("paired_seeds",)))
