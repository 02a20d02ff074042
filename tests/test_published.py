"""The published-figures table (moot/report/published.yaml): it loads, its figures keep their marks
and scale, and a damaged file is refused in one line naming its line and key."""

from __future__ import annotations

import re

from pathlib import Path

import pytest

from moot.experiment.tables import Measured, published_grid
from moot.metrics.stats import t_interval
from moot.report.formats import markdown
from moot.report.published import figure, items_line, omitted, parse, table, tables
from moot.safety.yamlsource import SourceError

ROOT = Path(__file__).resolve().parents[1]

PAPERS = ("cola_stance_detection.txt", "s2mad_rumor_detection.txt", "decision_conference_agreement_detection.txt")


def test_every_table_loads_and_says_where_it_is_printed() -> None:
    found = tables()
    assert {"COLA/Table 2", "COLA/Table 4", "COLA/Table 5", "S2MAD/Table 1", "S2MAD/Table 2",
            "Heller/Table 1", "Heller/Table 5", "Heller/5.2.2"} <= set(found)
    for spec in (t.spec for t in found.values()):
        paper, lines = re.fullmatch(r"(\S+):(\d+)-(\d+) \(.+\)", spec.where).group(1, 2)  # type: ignore[union-attr]
        assert paper in PAPERS and int(lines) > 0


def test_every_figure_is_shown_as_the_file_prints_it() -> None:
    """`0.720` stays `0.720` (a YAML float would read 0.72): the published column keeps the paper's
    precision, quoted in the file where a float would lose a digit."""
    text = (ROOT / "moot" / "report" / "published.yaml").read_text(encoding="utf-8")
    checked, table_id = 0, ""
    for line in text.splitlines():
        found_id = re.match(r"\s*- id: (.+)$", line)
        table_id = found_id.group(1).strip() if found_id else table_id
        row = re.match(r"\s*- \{name: (.+?), values: \[(.*)\]\}\s*$", line)
        if row:
            printed = [token.strip().strip('"') for token in row.group(2).split(",")]
            shown = [table(table_id).figure(row.group(1), c.name) for c in table(table_id).spec.columns]
            assert [f.printed if f else "null" for f in shown] == printed, line
            checked += 1
    assert checked == sum(len(t.spec.rows) for t in tables().values())
    assert table("S2MAD/Table 1").figure("BiGCN", "Weibo RF1").printed == "0.720"  # type: ignore[union-attr]


def test_figures_keep_their_marks_and_moots_scale() -> None:
    cola = table("COLA/Table 2")
    hc = cola.figure("COLA", "HC")
    assert hc is not None and hc.value == pytest.approx(0.817) and hc.mark == "*" and hc.printed == "81.7*"
    assert cola.figure("TGA Net", "Trump") is None  # printed as "-"
    assert cola.figure("COLA", "no such column") is None
    s2mad = table("S2MAD/Table 1").figure("GPT3.5 + S2MAD", "Weibo Mac-F1")
    assert s2mad is not None and s2mad.value == pytest.approx(0.764) and s2mad.mark == ""
    assert figure(None, "percent") is None
    with pytest.raises(KeyError, match="COLA/Table 2"):
        table("COLA/Table 9")


BAD_ROW = """tables:
  - id: X/Table 1
    title: t
    paper: p
    where: "x.txt:1-2 (Table 1)"
    unit: fraction
    runs_averaged: null
    columns: [{name: a, dataset: d, metric: accuracy}]
    rows:
      - {name: r, values: [0.5, 0.6]}
"""


def test_a_damaged_file_is_one_line_naming_line_and_key() -> None:
    with pytest.raises(SourceError) as bad:
        parse(BAD_ROW, "pub.yaml")
    assert "pub.yaml:2" in str(bad.value) and "2 values for 1 columns" in str(bad.value)
    with pytest.raises(SourceError) as unknown:
        parse(BAD_ROW.replace("    title: t", "    titel: t"), "pub.yaml")
    assert str(unknown.value).startswith("pub.yaml:3: tables[0].titel:")
    with pytest.raises(SourceError, match="is not a figure"):
        parse(BAD_ROW.replace("[0.5, 0.6]", '["n/a"]'), "pub.yaml")


def test_the_papers_significance_rule_is_data_as_its_text_states_it() -> None:
    rule = table("COLA/Table 2").spec.significance
    assert rule is not None and (rule.mark, rule.row, rule.test, rule.adjustment, rule.alpha) == \
        ("*", "COLA", "paired_t", "none", 0.05)
    assert rule.where.startswith("cola_stance_detection.txt:256 ")  # the caption: "* denotes COLA improves ..."
    assert all(t.spec.significance is None for t in tables().values() if not t.spec.marks)


RULE = BAD_ROW.replace("    columns:", '    marks: {"*": better}\n    significance: {mark: "*", row: r, test: paired_t, '
                       'adjustment: none, where: "x.txt:2"}\n    columns:').replace("[0.5, 0.6]", "[0.5]")


@pytest.mark.parametrize("old, new, says", [
    ("test: paired_t", "test: mcnemar", "mcnemar tests accuracy only, not the columns a"),
    ("row: r", "row: q", "row 'q' is not a row"),
    ('mark: "*"', 'mark: "+"', "mark '+' is not one of marks"),
    ("adjustment: none", "adjustment: bonferroni", "adjustment"),
])
def test_a_significance_rule_that_cannot_hold_is_refused_naming_its_line(old: str, new: str, says: str) -> None:
    good = RULE.replace("metric: accuracy", "metric: f_avg")
    assert parse(good, "pub.yaml")["X/Table 1"].spec.significance is not None
    with pytest.raises(SourceError) as bad:
        parse(good.replace(old, new), "pub.yaml")
    assert str(bad.value).startswith("pub.yaml:") and "\n" not in str(bad.value) and says in str(bad.value), str(bad.value)


@pytest.mark.parametrize("column, says", [
    ("{name: a, dataset: d, metric: accuracy, measure: m}", "give one of metric, measure, series"),
    ("{name: a, metric: accuracy}", "a metric is over a dataset"),
    ("{name: a, series: s}", "a series column names its step"),
    ("{name: a, measure: m, step: 2}", "a series column names its step"),
])
def test_a_column_measures_one_thing(column: str, says: str) -> None:
    text = BAD_ROW.replace("[{name: a, dataset: d, metric: accuracy}]", f"[{column}]").replace("[0.5, 0.6]", "[0.5]")
    with pytest.raises(SourceError) as bad:
        parse(text, "pub.yaml")
    assert str(bad.value).startswith("pub.yaml:") and says in str(bad.value), str(bad.value)


def test_table_5_reads_the_grades_of_runs_and_prints_integers_as_the_paper() -> None:
    t5 = table("Heller/Table 5")
    assert [(c.series, c.step, c.measure) for c in t5.spec.columns][:2] == [("judge_grades", 1, None),
                                                                          ("judge_grades", 2, None)]
    assert t5.spec.columns[-1].measure == "judge_grade"
    found = t5.figure("Gemma 7B", "Debate 1")
    assert found is not None and found.printed == "10" and found.value == 10.0
    overall = t5.figure("Gemma 7B", "Overall")
    assert overall is not None and overall.printed == "3.8"


def test_the_papers_item_count_is_printed_beside_the_measured_one() -> None:
    """A published-table run on fewer or other items than the paper's says so in one line."""
    assert [table(t).spec.items.count for t in ("Heller/Table 1", "Heller/Table 2", "Heller/Table 3",
                                                "Heller/Table 4")] == [676, 676, 1355, 1355]  # type: ignore[union-attr]
    vast = table("Heller/Table 1").spec.items
    assert items_line(vast, [5, 5, 5]) == "items: 5 of the paper's 676 (" + vast.of + ")"  # type: ignore[union-attr]
    assert items_line(vast, [3006]) is not None and items_line(vast, [3006]).startswith("items: 3,006 of the paper's 676")  # type: ignore[union-attr]
    assert items_line(vast, [4, 7]).startswith("items: 4-7 of")  # type: ignore[union-attr]
    assert items_line(vast, []) is None and items_line(None, []) is None
    assert items_line(None, [5]) == ("items: 5 measured; the paper's count for this table is not declared "
                                     "(published.yaml `items`)")
    grid = published_grid({"local": {"F1": {"a": Measured(0.5, t_interval([0.5]), 5, 1)}}}, table("Heller/Table 1"),
                          {"a": "Gemma 2 9B"}, ["a"])
    assert sum(n.startswith("items: 5 of the paper's 676 (VAST test") for n in grid.notes) == 1
    assert "items: 5 of the paper's 676" in markdown(grid)


def test_a_papers_item_count_is_a_positive_whole_number() -> None:
    with pytest.raises(SourceError, match="items.count"):
        parse(BAD_ROW.replace("    rows:", "    items: {count: 0, of: x}\n    rows:").replace("[0.5, 0.6]", "[0.5]"),
              "pub.yaml")


# Every table the papers print (their captions), as the papers' text numbers them.
PAPER_TABLES = {"COLA": range(1, 9), "S2MAD": range(1, 3), "Heller": range(1, 6)}


def test_every_paper_table_is_shipped_or_omitted_with_a_reason() -> None:
    shipped, left_out = set(tables()), omitted()
    expected = {f"{paper}/Table {n}" for paper, numbers in PAPER_TABLES.items() for n in numbers}
    assert expected <= shipped | set(left_out), expected - shipped - set(left_out)
    assert not shipped & set(left_out) and all(len(why) > 40 for why in left_out.values())
    assert set(left_out) == {"COLA/Table 1", "COLA/Table 3", "COLA/Table 6", "COLA/Table 7", "COLA/Table 8"}
