"""Human and model ratings side by side in `moot report`: for each run folder with annotations
(`moot annotate`), per kind of rated thing and per question (a verdict, a label, each of the ten
criteria), what each person and the run's model answered on the same units, and how far they
agree: Cohen's kappa for closed answers (each person with the model, each pair of people),
Krippendorff's alpha (interval; everyone, then the people alone) and Spearman's rho (each person
with the model) for scores, each with n and a bootstrap interval (moot.metrics.agreement).
Several runs (models) are rows of their own; several raters are columns of their own.
"""

from __future__ import annotations

import math

import numpy as np
from dataclasses import dataclass, field
from itertools import combinations
from typing import Optional, Sequence

from moot.contract.report import CsvFile, ReportPart
from moot.kit.seats import Question
from moot.log.annotations import read_ratings
from moot.metrics.agreement import (alpha_of, complete, kappa_of, label_codes, paired_n, rho_of, score_values,
                                    with_interval)
from moot.metrics.stats import Interval
from moot.report.runs import Run

MODEL = "model"
HEAD = ("run", "kind", "question", "statistic", "raters", "n", "estimate", "low", "high", "note")


@dataclass
class Asked:
    """One question of one kind in one run: the units asked, each rater's answers in unit order."""

    kind: str
    question: Question
    by: set[str] = field(default_factory=set)  # the model(s) whose answers these are
    units: list[tuple[str, str]] = field(default_factory=list)  # (unit, item)
    parts: list[str] = field(default_factory=list)  # where in its unit each is (Rateable.part)
    answers: dict[str, list[Optional[str]]] = field(default_factory=dict)  # rater (or MODEL) -> answers


def questions_of(run: Run) -> tuple[list[Asked], list[str]]:
    """The run's rated questions (on the units a person rated) and its raters."""
    ratings = read_ratings(run.path) if run.source.is_folder else []
    if not ratings or run.contract is None:
        return [], []
    given = {(r.rater, r.unit, r.item, r.key): r.value for r in ratings}
    raters = sorted({r.rater for r in ratings})
    rated = {(r.unit, r.item) for r in ratings}
    found: dict[tuple[str, str], Asked] = {}
    for ref in run.source.units:
        if not any(unit == ref.id for unit, _ in rated):
            continue
        for thing in run.contract.rateables(ref.load()):
            if (ref.id, thing.id) not in rated:
                continue
            for q in thing.questions:
                entry = found.setdefault((thing.kind, q.key), Asked(thing.kind, q))
                entry.by.add(thing.by)
                entry.units.append((ref.id, thing.id))
                entry.parts.append(thing.part)
                entry.answers.setdefault(MODEL, []).append(thing.model.get(q.key))
                for rater in raters:
                    entry.answers.setdefault(rater, []).append(given.get((rater, ref.id, thing.id, q.key)))
    return list(found.values()), raters


def rows_of(run: Run, q: Asked, raters: Sequence[str]) -> list[tuple[str, str, Interval]]:
    """(statistic, raters, interval) of one question."""
    rows = []
    a = q.answers
    if q.question.kind == "choice":
        for rater in raters:
            rows.append(("kappa", f"{rater}~{MODEL}", _kappa(a[rater], a[MODEL])))
        for one, other in combinations(raters, 2):
            rows.append(("kappa", f"{one}~{other}", _kappa(a[one], a[other])))
        return rows
    scores = {r: [_float(v) for v in values] for r, values in a.items()}
    everyone = [MODEL, *raters]
    rows.append(("alpha", "+".join(everyone), _alpha([scores[r] for r in everyone])))
    if len(raters) > 1:
        rows.append(("alpha", "+".join(raters), _alpha([scores[r] for r in raters])))
    for rater in raters:
        pair = complete(score_values(scores[rater], scores[MODEL]))
        rows.append(("rho", f"{rater}~{MODEL}", with_interval(rho_of, pair, pair.shape[1], vectorized=True)))
    return rows


def _kappa(a: list[Optional[str]], b: list[Optional[str]]) -> Interval:
    codes = label_codes(a, b)
    return with_interval(kappa_of, codes, paired_n(codes))


def _alpha(columns: list[list[Optional[float]]]) -> Interval:
    data = score_values(*columns)
    return with_interval(alpha_of, data, int(((~np.isnan(data)).sum(axis=0) >= 2).sum()))


def _float(value: Optional[str]) -> Optional[float]:
    return float(value) if value is not None else None


def _mean(values: list[Optional[float]]) -> str:
    present = [v for v in values if v is not None]
    return f"{sum(present) / len(present):.2f}" if present else "–"


def _cell(interval: Interval) -> str:
    if math.isnan(interval.estimate):
        return f"– (n={interval.n})"
    ci = f" [{interval.low:.2f}, {interval.high:.2f}]" if not math.isnan(interval.low) else ""
    return f"{interval.estimate:.2f}{ci} (n={interval.n})"


def agreement_part(runs: Sequence[Run]) -> Optional[ReportPart]:
    """The report's section on human and model ratings; None when no run has annotations."""
    sections: list[str] = []
    csv_rows: list[tuple[object, ...]] = []
    for run in runs:
        questions, raters = questions_of(run)
        if not questions:
            continue
        sections += [f"### {run.ref}: {run.path.name} · raters {', '.join(raters)}", ""]
        for kind in dict.fromkeys(q.kind for q in questions):
            mine = [q for q in questions if q.kind == kind]
            table = [_row(run, q, raters, csv_rows) for q in mine]
            head = ["question", MODEL, *raters, *[name for name, _ in table[0][1]]]
            by = ", ".join(sorted(set().union(*(q.by for q in mine))))
            sections += [f"{kind} (model: {by}):", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            sections += ["| " + " | ".join([q.question.key, *cells, *[c for _, c in stats_]]) + " |"
                         for q, (cells, stats_) in zip(mine, table)]
            sections.append("")
    if not sections:
        return None
    sections += by_part(runs)
    intro = ["## Human and model ratings", "",
             "From each run's annotations.jsonl (`moot annotate`): per question, the model's and each rater's "
             "answers on the units people rated (closed answers: the most common one; scores: the mean), then "
             "Cohen's kappa (closed answers), Krippendorff's alpha (interval) and Spearman's rho (scores) with "
             "95 % percentile bootstrap intervals over units and n; `~` pairs two raters, `+` lists those "
             "alpha is over. Unparsed model answers are left out of a pair.", ""]
    return ReportPart(sections=tuple(intro + sections), csv=(CsvFile("agreement.csv", HEAD, tuple(csv_rows)),))


def by_part(runs: Sequence[Run]) -> list[str]:
    """Per kind, a row per run and a column per part of its units (Heller et al. Table 5's shape:
    models by debates): how often the model answered as the people did (closed answers), or the
    model's mean score / the people's (scores), over the part's rated things and questions."""
    tables: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for run in runs:
        questions, raters = questions_of(run)
        for kind in dict.fromkeys(q.kind for q in questions):
            mine = [q for q in questions if q.kind == kind]
            parts = list(dict.fromkeys(p for q in mine for p in q.parts))
            cells = {part: _part_cell(mine, raters, {part}) for part in parts}
            cells["overall"] = _part_cell(mine, raters, set(parts))
            by = ", ".join(sorted(set().union(*(q.by for q in mine))))
            tables.setdefault(kind, []).append((f"{run.ref} {by}", cells))
    lines = ["### By part of the units (Table 5's shape)", "",
             "Closed answers: the share of (model, rater) pairs that agree; scores: the model's mean / the "
             "raters' mean; over the part's rated things (n: pairs, or scores).", ""]
    for kind, rows in tables.items():
        columns = list(dict.fromkeys(c for _, cells in rows for c in cells if c != "overall")) + ["overall"]
        lines += [f"{kind}:", "", "| run · model | " + " | ".join(columns) + " |", "|" + "---|" * (len(columns) + 1)]
        lines += ["| " + " | ".join([name, *(cells.get(c, "–") for c in columns)]) + " |" for name, cells in rows]
        lines.append("")
    return lines


def _part_cell(asked: Sequence[Asked], raters: Sequence[str], parts: set[str]) -> str:
    pairs = [(q.answers[MODEL][i], q.answers[r][i]) for q in asked for i, p in enumerate(q.parts) if p in parts
             for r in raters]
    pairs = [(m, h) for m, h in pairs if m is not None and h is not None]
    if not pairs:
        return "–"
    if asked[0].question.kind == "choice":
        return f"{sum(m == h for m, h in pairs) / len(pairs):.0%} (n={len(pairs)})"
    model = [float(str(m)) for m, _ in pairs]
    people = [float(str(h)) for _, h in pairs]
    return f"{sum(model) / len(model):.1f} / {sum(people) / len(people):.1f} (n={len(pairs)})"


def _row(run: Run, q: Asked, raters: Sequence[str], csv_rows: list[tuple[object, ...]]) -> tuple[list[str], list[tuple[str, str]]]:
    """One question's cells: each rater's summary answer, then its statistics (also as CSV rows)."""
    if q.question.kind == "choice":
        cells = [_mode(q.answers[r]) for r in (MODEL, *raters)]
    else:
        cells = [_mean([_float(v) for v in q.answers[r]]) for r in (MODEL, *raters)]
    found = []
    for statistic, who, interval in rows_of(run, q, raters):
        found.append((f"{statistic} {who}", _cell(interval)))
        csv_rows.append((run.ref, q.kind, q.question.key, statistic, who, interval.n, interval.estimate,
                         interval.low, interval.high, interval.note))
    return cells, found


def _mode(values: list[Optional[str]]) -> str:
    present = [v for v in values if v is not None]
    return max(sorted(set(present)), key=present.count) if present else "–"

