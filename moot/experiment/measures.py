"""Arms whose units are runs of the scenario (a conference): their protocol's measures over seeds.

Each cell is one run per seed; its unit's measures (the protocol's metrics hook: a conference's
share of topics agreed, rounds to agreement, evaluator score, reference coverage) are read through
moot's API. Per arm and measure: the mean over seeds with a 95 % t interval; against the reference,
paired by seed: Δ, the Wilcoxon signed-rank test and the paired t-test, Holm over the arms (on
Wilcoxon's p).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from moot.metrics import stats
from moot.report.formats import Grid

METHOD = ("Mean over seeds with a 95% t interval; Δ = arm - reference paired by seed; p: Wilcoxon signed-rank "
          "test (zero differences dropped), Holm-adjusted over the arms; paired t-test beside it.")


@dataclass(frozen=True)
class MeasureCell:
    arm: str
    model: str
    seed: int
    values: dict[str, float]


def read_cell(arm: str, model: str, seed: int, folder: Path) -> Optional[MeasureCell]:
    """A finished run-of-the-scenario cell's measures (None: nothing finished)."""
    from moot.api.saved import open_run

    saved = open_run(folder)
    if saved.contract is None or saved.contract.units.items:
        return None
    for unit in saved.units():
        if unit.row is not None:
            values = {k: v for k, v in unit.measures().items() if v is not None}
            return MeasureCell(arm, model, seed, values)
    return None


def _num(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.3f}"


def measure_grid(cells: Sequence[MeasureCell], measure: str, model: str, arms: Sequence[str],
                 reference: Optional[str]) -> Optional[Grid]:
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
        rows.append((arm, str(len(values)), _num(found.estimate), f"[{_num(found.low)}, {_num(found.high)}]",
                     *((f"{t[0]:+.3f}", _num(t[1].pvalue), _num(adjusted[arm]), _num(t[2].pvalue), str(t[3])) if t else
                       ("reference" if arm == reference else "–", "–", "–", "–", "–"))))
    head = ("arm", "seeds", "mean", "95% CI", f"Δ vs {reference}" if reference else "Δ", "p (Wilcoxon)", "p (Holm)",
            "p (paired t)", "paired seeds")
    return Grid(f"{measure} · {model}", head, tuple(rows), (METHOD,), key="measures")
