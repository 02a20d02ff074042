"""The viewer states what happened: a unit with no end while its run holds its folder is running
(not "did not finish"), an outcome's box is styled by its correctness (its own class for correct,
incorrect and unparsed), and a run whose units are not items shows no item columns."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
from pathlib import Path, PurePosixPath

import pytest
from viewer_support import COLA, cli, stance_dataset

from moot.log.events import Message, RunFinished, RunStarted
from moot.log.transcript import EventLog
from moot.viewer.links import ServerLinks
from moot.viewer.pages import Pages
from moot.viewer.paths import Root
from moot.viewer.units import Query

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """A COLA run (s2 answered wrong) and a conference run, under one folder."""
    top = tmp_path_factory.mktemp("states")
    (top / "cola.yaml").write_text(COLA, encoding="utf-8")
    cli(top / "cola.yaml", "--dataset", stance_dataset(top / "data", "s", {"s2"}), "--out", top / "runs" / "cola",
        "--quiet")
    cli(ROOT / "scenarios" / "drug_policy.yaml", "--model", "scripted", "--out", top / "runs" / "conf", "--quiet")
    return top / "runs"


def pages(top: Path) -> Pages:
    return Pages(Root(top))


def unit_html(top: Path, run: str, key: str) -> str:
    shown = pages(top)
    try:
        return shown.unit_regions(ServerLinks(), PurePosixPath(run), key)["unit-body"]
    finally:
        shown.close()


def started_only(path: Path) -> None:
    """A unit that has started and said one thing, with no end yet."""
    log = EventLog(path, fsync=False)
    log.append(RunStarted(run_id="r", protocol="cola", scenario_path="s.yaml", scenario_sha256="x",
                          scenario={"labels": ["favor", "against"]}, models={"a": "scripted"}, unit="extra"),
               Message(turn=1, speaker="a", role="a", action="analysis", content="thinking"))
    log.close()


def test_a_unit_without_an_end_is_running_while_its_run_holds_the_folder(runs, tmp_path):
    shutil.copytree(runs / "cola", tmp_path / "cola")
    started_only(tmp_path / "cola" / "extra.jsonl")
    lock = os.open(tmp_path / "cola" / "run.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        live = unit_html(tmp_path, "cola", "extra")
        finished = unit_html(tmp_path, "cola", "s1")
        table = pages(tmp_path).run_regions(ServerLinks(), PurePosixPath("cola"), Query())
    finally:
        os.close(lock)
    assert "did not finish" not in live and 'class="status s-running"' in live
    assert "Running: no end recorded yet" in live
    assert 'class="status s-running"' not in finished and 'class="status s-completed"' in finished
    assert table["units"].count('class="status s-running"') == 1  # the unit with no end; the others completed
    cut = unit_html(tmp_path, "cola", "extra")  # the lock released: nobody is writing it
    assert "did not finish" in cut and "s-running" not in cut and 'class="status s-unfinished"' in cut


def outcome_classes(html: str) -> list[str]:
    return re.findall(r'<div class="note outcome ?([a-z]*)"', html)


def test_an_outcome_is_styled_by_its_correctness(runs):
    assert outcome_classes(unit_html(runs, "cola", "s1")) == ["correct"]
    assert outcome_classes(unit_html(runs, "cola", "s2")) == ["incorrect"]


def test_an_unparsed_outcome_and_one_without_gold_have_their_own_styles(tmp_path):
    cli("debate", "--model", "scripted", "--input", "text=Fine. SCRIPTED_LABEL=GARBAGE", "--out", tmp_path / "debate",
        "--quiet", expect=4)  # every answer unparsed
    (key,) = [p.stem for p in (tmp_path / "debate").glob("item-*.jsonl")]
    assert outcome_classes(unit_html(tmp_path, "debate", key)) == ["unparsed"]
    cli("cola", "--model", "scripted", "--input", "text=Fine. SCRIPTED_LABEL=favor", "--out", tmp_path / "cola",
        "--quiet")
    (key,) = [p.stem for p in (tmp_path / "cola").glob("item-*.jsonl")]
    assert outcome_classes(unit_html(tmp_path, "cola", key)) == [""]  # no gold: neither right nor wrong


def header_cells(html: str) -> list[str]:
    head = re.search(r"<thead>(.*?)</thead>", html, re.S)
    assert head is not None
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<th[^>]*>(.*?)</th>", head.group(1))]


def test_item_columns_show_only_for_a_run_of_items(runs):
    shown = pages(runs)
    try:
        items = shown.run_page(ServerLinks(), PurePosixPath("cola"))
        conference = shown.run_page(ServerLinks(), PurePosixPath("conf"))
    finally:
        shown.close()
    assert {"Target", "Gold", "Correct"} <= set(header_cells(items))
    assert not {"Target", "Gold", "Correct", "prediction"} & set(header_cells(conference))
    assert ">wrong</a>" in items and ">wrong</a>" not in conference and ">failed</a>" in conference
