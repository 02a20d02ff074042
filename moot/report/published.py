"""The papers' published figures (moot/report/published.yaml), read and looked up by table.

A report puts these beside what it measured (moot.report.compare): each figure with its mark as
printed ("81.7*"), on moot's scale (a `percent` table's 81.7 is 0.817), and where the paper prints
it. The file is moot's own extraction from the papers' text; see its header.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Annotated, Iterable, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from moot.scenario.errors import to_scenario_error
from moot.safety.yamlsource import SourceError, YamlSource, parse_yaml

Unit = Literal["percent", "fraction", "score", "count"]
_FIGURE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([*†‡§]*)\s*$")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Column(Strict):
    """What a published column measures: a classification `metric` over a `dataset`'s items (or one
    `target`'s); or, for runs of a scenario, a protocol's `measure` per run, or one `step` of its
    `series` (moot.contract.metrics), each averaged over the runs (seeds)."""

    name: str
    dataset: Optional[str] = None
    target: Optional[str] = None
    metric: Optional[str] = None
    measure: Optional[str] = None
    series: Optional[str] = None
    step: Optional[int] = None

    @model_validator(mode="after")
    def _one_kind(self) -> "Column":
        kinds = [k for k in ("metric", "measure", "series") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(f"column {self.name!r}: give one of metric, measure, series")
        if (self.metric is None) != (self.dataset is None):
            raise ValueError(f"column {self.name!r}: a metric is over a dataset (give both, or neither)")
        if (self.series is None) != (self.step is None):
            raise ValueError(f"column {self.name!r}: a series column names its step (give both, or neither)")
        return self


class Row(Strict):
    name: str
    values: tuple[Union[int, float, str, None], ...]  # an int stays one: printed as the paper prints it


class PaperItems(Strict):
    """The items the paper measured a table on: how many, and which, where the paper says so; a
    measured table prints its own count beside it (a subset, another split, or the paper's set)."""

    count: Annotated[int, Field(ge=1)]
    of: str  # e.g. "VAST test, Heller §5.1.1"


class Significance(Strict):
    """The paper's rule for its mark, as its text states it (`where`): `mark` on the cell of `row`
    when that row beats the best of the table's other rows (its baselines) with p < `alpha` under
    `test`, p `adjustment` as stated (none: raw). moot applies it to the arms an experiment maps
    onto the rows (moot.experiment.tables); the stricter rule (the best measured arm, Holm) is
    `strict` there."""

    mark: str
    row: str
    test: Literal["paired_t", "bootstrap", "wilcoxon", "mcnemar"]
    adjustment: Literal["none", "holm"]
    alpha: Annotated[float, Field(gt=0, lt=1)] = 0.05
    where: str


class TableSpec(Strict):
    id: str
    title: str
    paper: str
    where: str
    unit: Unit
    runs_averaged: Optional[int]
    model: Optional[str] = None
    marks: dict[str, str] = {}
    significance: Optional[Significance] = None
    note: Optional[str] = None
    items: Optional[PaperItems] = None
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]

    @model_validator(mode="after")
    def _shape(self) -> "TableSpec":
        for row in self.rows:
            if len(row.values) != len(self.columns):
                raise ValueError(f"row {row.name!r} has {len(row.values)} values for {len(self.columns)} columns")
            for value in row.values:
                if isinstance(value, str) and not _FIGURE.match(value):
                    raise ValueError(f"row {row.name!r}: {value!r} is not a figure with an optional mark")
        self._rule()
        return self

    def _rule(self) -> None:
        """The significance rule names a mark and a row of this table, and a test of its metrics."""
        rule = self.significance
        if rule is None:
            return
        if rule.mark not in self.marks:
            raise ValueError(f"significance: mark {rule.mark!r} is not one of marks ({', '.join(self.marks) or 'none'})")
        if rule.row not in [r.name for r in self.rows]:
            raise ValueError(f"significance: row {rule.row!r} is not a row of the table")
        unsuited = [c.name for c in self.columns if rule.test == "mcnemar" and c.metric != "accuracy"]
        if unsuited:
            raise ValueError(f"significance: test mcnemar tests accuracy only, not the columns {', '.join(unsuited)}")


class PublishedFile(Strict):
    tables: tuple[TableSpec, ...]
    omitted: dict[str, str] = {}  # a paper table moot does not ship (its id) -> why


def items_line(items: Optional[PaperItems], measured: Iterable[int]) -> Optional[str]:
    """One line putting the item counts measured beside the paper's ("items: 5 of the paper's 676
    (VAST test, Heller §5.1.1)"), or that the table does not declare the paper's; None when nothing
    was measured over items."""
    counts = sorted(set(measured))
    if not counts:
        return None
    shown = f"{counts[0]:,}" if len(counts) == 1 else f"{counts[0]:,}-{counts[-1]:,}"
    if items is None:
        return f"items: {shown} measured; the paper's count for this table is not declared (published.yaml `items`)"
    return f"items: {shown} of the paper's {items.count:,} ({items.of})"


@dataclass(frozen=True)
class Figure:
    """One published figure: its value on moot's scale, its mark as printed, and the text printed."""

    value: float
    mark: str
    printed: str

    @property
    def digits(self) -> str:
        """The number as printed, without its mark ("0.440", "81.7"): a CSV cell keeps the paper's precision."""
        return self.printed.removesuffix(self.mark).strip() if self.mark else self.printed


def figure(raw: Union[int, float, str, None], unit: Unit) -> Optional[Figure]:
    """A cell of a published row as a Figure (None: the paper prints no figure there)."""
    if raw is None:
        return None
    found = _FIGURE.match(str(raw))
    if found is None:
        raise ValueError(f"{raw!r} is not a figure")
    number = float(found.group(1))
    return Figure(number / 100 if unit == "percent" else number, found.group(2), str(raw).strip())


@dataclass(frozen=True)
class Published:
    """One paper table: its spec and its figures by (row, column)."""

    spec: TableSpec

    def figure(self, row: str, column: str) -> Optional[Figure]:
        names = [c.name for c in self.spec.columns]
        found = next((r for r in self.spec.rows if r.name == row), None)
        if found is None or column not in names:
            return None
        return figure(found.values[names.index(column)], self.spec.unit)

    @property
    def rows(self) -> list[str]:
        return [r.name for r in self.spec.rows]

    def column(self, name: str) -> Column:
        return next(c for c in self.spec.columns if c.name == name)


FILE = "published.yaml"


def parse(text: str, file: str = FILE) -> dict[str, Published]:
    """The tables of a published-figures file by id; a SourceError names file, line and key."""
    source = parse_yaml(text, file)
    parsed = _validated(source)
    tables: dict[str, Published] = {}
    for index, spec in enumerate(parsed.tables):
        if spec.id in tables:
            raise SourceError(file, f"table {spec.id!r} twice", ("tables", index, "id"),
                              source.line_of(("tables", index, "id")))
        tables[spec.id] = Published(spec)
    return tables


def _validated(source: YamlSource) -> PublishedFile:
    try:
        return PublishedFile.model_validate(source.data)
    except ValidationError as exc:
        raise to_scenario_error(exc, source, PublishedFile) from None


def _own_text() -> str:
    return resources.files("moot.report").joinpath(FILE).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def tables() -> dict[str, Published]:
    """moot's own published-figures file (package data)."""
    return parse(_own_text(), f"moot/report/{FILE}")


@lru_cache(maxsize=1)
def omitted() -> dict[str, str]:
    """The papers' tables moot ships no figures of, each with the reason (the file's `omitted`)."""
    return dict(_validated(parse_yaml(_own_text(), f"moot/report/{FILE}")).omitted)


def table(table_id: str) -> Published:
    """A paper table by id (`COLA/Table 2`); KeyError naming the known ones."""
    found = tables()
    if table_id not in found:
        raise KeyError(f"no published table {table_id!r} (known: {', '.join(found)})")
    return found[table_id]
