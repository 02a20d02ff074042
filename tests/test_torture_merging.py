"""Torture: nothing is merged silently (issue 32, class 6). Shards of one experiment whose arm or
dataset content, or `--limit`, differ are refused by `moot report` in one line naming both folders,
never pooled as one arm; `moot compare` of runs over different datasets, or over datasets that
share ids but not content, refuses in one line; runs over one dataset still compare and say what
they dropped."""

from __future__ import annotations

from pathlib import Path

import pytest
from torture_support import ROWS, SCRIPTED_COLA, assert_clean, case, moot, write

ID_SPEC = "path: data.csv\nformat: csv\ncolumns: {id: id, text: text, target: target, label: label}\n"


def id_dataset(folder: Path, rows=ROWS) -> Path:
    """A dataset whose ids are its own column (so two datasets can share ids but not content)."""
    write(folder / "data.csv", "id,text,target,label\n" + "".join(f'{i},"{t}",{g},{lab}\n'
                                                                   for i, (t, g, lab) in enumerate(rows, 1)))
    return write(folder / "data.yaml", ID_SPEC)


def experiment(folder: Path) -> Path:
    write(folder / "cola.yaml", SCRIPTED_COLA)
    id_dataset(folder)
    return write(folder / "exp.yaml", "experiment: t\narms:\n  - {name: a, scenario: cola.yaml}\ndatasets: [data.yaml]\n")


def shard(spec: Path, number: int, *extra: object) -> None:
    ran = moot("run", spec, "--model", "scripted", "--shard", f"{number}/2", "--out", spec.parent / "out", "--quiet",
               *extra)
    assert ran.code == 0, ran.err


@pytest.mark.parametrize("how", ["--limit", "arm content", "dataset content"])
def test_unlike_shards_are_never_pooled(tmp_path, how):
    with case("bad inputs", "merging"):
        spec = experiment(tmp_path)
        shard(spec, 1, "--limit", 4)
        if how == "arm content":
            write(tmp_path / "cola.yaml", SCRIPTED_COLA + "title: another COLA\nmax_unparsed: 0.5\n")
        elif how == "dataset content":
            id_dataset(tmp_path, [(t + " Really.", g, lab) for t, g, lab in ROWS])
        shard(spec, 2, "--limit", 3 if how == "--limit" else 4)
        ran = moot("report", tmp_path / "out", "--out", tmp_path / "report")
        assert ran.code == 2, ran.err
        assert_clean(ran, max_err_lines=1)
        assert "not pooled" in ran.err and "shard-1-of-2" in ran.err and "shard-2-of-2" in ran.err
        assert not (tmp_path / "report").exists()


def test_like_shards_are_pooled(tmp_path):
    with case("bad inputs", "merging"):
        spec = experiment(tmp_path)
        shard(spec, 1, "--limit", 4)
        shard(spec, 2, "--limit", 4)
        ran = moot("report", tmp_path / "out", "--out", tmp_path / "report")
        assert ran.code == 0, ran.err


def run_on(folder: Path, rows=ROWS, *extra: object) -> Path:
    write(folder / "cola.yaml", SCRIPTED_COLA)
    id_dataset(folder, rows)
    ran = moot("run", folder / "cola.yaml", "--dataset", folder / "data.yaml", "--out", folder / "run", "--quiet",
               *extra)
    assert ran.code == 0, ran.err
    return folder / "run"


OTHER = {"same ids, other texts": [(t + " Really.", g, lab) for t, g, lab in ROWS],
         "same ids, other labels": [(t, g, {"favor": "against"}.get(lab, lab)) for t, g, lab in ROWS]}


@pytest.mark.parametrize("how", sorted(OTHER))
def test_compare_refuses_runs_over_datasets_that_share_ids_but_not_content(tmp_path, how):
    with case("bad inputs", "merging"):
        a, b = run_on(tmp_path / "a"), run_on(tmp_path / "b", OTHER[how])
        ran = moot("compare", a, b, "--out", tmp_path / "cmp")
        assert ran.code == 2, ran.err
        assert_clean(ran, max_err_lines=1)
        assert "different datasets that share a name but not their content" in ran.err and "sha256" in ran.err
        assert not (tmp_path / "cmp").exists()


def test_compare_of_one_dataset_says_what_it_dropped(tmp_path):
    with case("bad inputs", "merging"):
        a, b = run_on(tmp_path / "a"), run_on(tmp_path / "b", ROWS, "--limit", 4)
        ran = moot("compare", a, b)
        assert ran.code == 0, ran.err
        assert "paired 4 units; dropped 2 without their pair (in A only: 2, e.g. 5, 6; in B only: 0)" in ran.out
