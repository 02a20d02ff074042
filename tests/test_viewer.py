"""`moot view` without a browser: its paths, the runs' statuses, the facts behind the filters, the
bundle's links, the command line, and that serving every page writes nothing under the folder."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
import urllib.request
from urllib.parse import unquote
from pathlib import Path, PurePosixPath

import pytest
from viewer_support import Viewer, cli, stance_dataset

from moot.cli import main
from moot.log.events import Message, Outcome, RunFinished, RunStarted
from moot.log.transcript import EventLog, load
from moot.viewer.catalog import Catalog
from moot.viewer.figures import Intervals, Scored, classification, paired_classification, paired_means, point
from moot.viewer.links import BundleLinks, ServerLinks, query_file
from moot.viewer.paths import Refused, Root
from moot.viewer.units import Query, facts_of

COLA = "protocol: cola\nmodels: {default: scripted}\njudger: {output: json}\n"


@pytest.fixture(scope="module")
def cola(tmp_path_factory) -> Path:
    top = tmp_path_factory.mktemp("cola")
    (top / "cola.yaml").write_text(COLA, encoding="utf-8")
    cli(top / "cola.yaml", "--dataset", stance_dataset(top / "data", "s", {"s2"}), "--out", top / "runs" / "cola",
        "--quiet")
    return top / "runs" / "cola"


# ------------------------------------------------------------------------------------------ paths
@pytest.mark.parametrize("raw", ["..", "%2e%2e", "a%2Fb", "a%2fb", "a%5Cb", ".hidden", "a/%00", "a/../b", "%2E%2E/x"])
def test_a_path_that_could_leave_the_folder_is_refused(tmp_path, raw):
    with pytest.raises(Refused):
        Root(tmp_path).resolve(raw)


def test_a_link_anywhere_on_the_way_is_refused_and_a_plain_path_resolves(tmp_path):
    (tmp_path / "runs" / "a b").mkdir(parents=True)
    (tmp_path / "runs" / "link").symlink_to(tmp_path / "runs" / "a b", target_is_directory=True)
    root = Root(tmp_path)
    rel, path = root.resolve("runs/a%20b")
    assert rel == PurePosixPath("runs/a b") and path == tmp_path.resolve() / "runs" / "a b"
    with pytest.raises(Refused):
        root.resolve("runs/link")
    with pytest.raises(Refused):
        root.resolve("runs/missing")


# ------------------------------------------------------------------------------------------ statuses
def transcript(path: Path, events: list, protocol: str = "cola") -> None:
    log = EventLog(path, fsync=False)
    log.append(RunStarted(run_id="r", protocol=protocol, scenario_path="s.yaml", scenario_sha256="x",
                          scenario={"labels": ["favor", "against"]}, models={"a": "scripted"}, unit=path.stem), *events)
    log.close()


def test_statuses_come_from_the_lock_the_results_and_the_transcripts_ends(cola, tmp_path):
    import shutil

    top = tmp_path / "runs"
    for name in ("finished", "failed", "cut", "running", "garbled"):
        shutil.copytree(cola, top / name)
    transcript(top / "failed" / "extra.jsonl", [RunFinished(status="failed", stop_reason="error: boom")])
    transcript(top / "cut" / "extra.jsonl", [Message(turn=1, speaker="a", role="a", action="analysis", content="x")])
    with open(top / "garbled" / "results.jsonl", "a") as f:
        f.write("not json\n{}\n")
    lock = os.open(top / "running" / "run.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        found = {r.name: r for r in Catalog(Root(tmp_path)).runs()}
    finally:
        os.close(lock)
    assert {k: v.status for k, v in found.items()} == {
        "runs/finished": "finished", "runs/failed": "failed", "runs/cut": "interrupted", "runs/running": "running",
        "runs/garbled": "failed"}
    assert found["runs/running"].holder == os.getpid() and found["runs/failed"].failed == 1
    assert found["runs/finished"].progress == "6/6" and found["runs/finished"].headline is not None
    assert "results.jsonl:7: garbled result row" in found["runs/garbled"].problem
    assert Catalog(Root(tmp_path)).summary(top / "running", True).status == "finished"  # released


def test_an_experiment_groups_its_runs_by_arm(cola, tmp_path):
    import shutil

    top = tmp_path / "exp"
    top.mkdir()
    (top / "experiment.json").write_text(json.dumps({"title": "Arms"}))
    for arm in ("base", "variant"):
        shutil.copytree(cola, top / arm / "s" / "default" / "seed-0")
    catalog = Catalog(Root(tmp_path))
    runs = catalog.runs()
    (experiment,) = catalog.experiments(runs)
    assert experiment.title == "Arms" and experiment.arms == ["base", "variant"] and len(experiment.runs) == 2


def test_an_experiments_page_shows_the_tables_of_moot_report(tmp_path, monkeypatch):
    import re

    from moot.viewer.pages import Pages

    data = stance_dataset(tmp_path / "data", "s", {"s2", "s5"})
    (tmp_path / "exp.yaml").write_text(
        "experiment: pair\narms:\n  - {name: direct, scenario: cola_direct}\n  - {name: cola, scenario: cola}\n"
        f"datasets: [{data}]\nmodels: [scripted]\nrepeats: 2\ncompare: {{reference: direct}}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "exp.yaml", "--quiet", "--out", "runs/pair"]) == 0
    assert main(["report", "runs/pair", "--out", "report"]) == 0
    report = (tmp_path / "report" / "experiment.md").read_text(encoding="utf-8")
    rows = [[re.sub(r"\\(.)", r"\1", cell) for cell in line.strip("| ").split(" | ")]  # as the Markdown renders
            for line in report.splitlines() if line.startswith(("| direct", "| cola"))]
    assert len(rows) == 6  # every item, then each of its two targets
    pages = Pages(Root(tmp_path / "runs"), inline=True)
    try:
        html = pages.experiment_page(ServerLinks(), PurePosixPath("pair"))
        assert pages.run_page(ServerLinks(), PurePosixPath("pair")) == html  # /run/EXPERIMENT is its page
        runs_list = pages.runs_page(ServerLinks())
    finally:
        pages.close()
    shown = [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
             for row in re.findall(r"<tr>(.*?)</tr>", html, re.S)]
    assert rows == [r for r in shown if r and r[0] in ("direct", "cola")]
    assert 'href="/experiment/pair"' in runs_list and 'class="findings' not in runs_list
    bundle = tmp_path / "site"
    assert main(["view", "runs", "--bundle", str(bundle)]) == 0
    page = bundle / "e" / "pair" / "index.html"
    links = re.findall(r'href="([^"#?:]+)"', page.read_text(encoding="utf-8"))
    assert "../../index.html" in links and any("/c/" in link for link in links)  # up, and direct vs cola
    assert len([link for link in links if "/r/pair/" in link]) == 4  # each cell
    assert [link for link in links if not (page.parent / unquote(link)).exists()] == []
    assert 'href="e/pair/index.html"' in (bundle / "index.html").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------ facts
def decided(turn: int, speaker: str, round_: int, decision: str) -> Message:
    return Message(turn=turn, speaker=speaker, role=speaker, action="debate", round=round_, content=decision,
                   decision=decision)


@pytest.mark.parametrize("first, last, prediction, flipped, disagree", [
    (("favor", "favor", "against"), ("against", "against", "against"), "against", True, False),
    (("favor", "favor", "against"), ("favor", "favor", "favor"), "favor", False, False),
    (("favor", "favor", "favor"), ("favor", "against", "favor"), "favor", False, True),
])
def test_flips_and_disagreement_are_read_from_the_decisions(tmp_path, first, last, prediction, flipped, disagree):
    events = [decided(n + 1, f"agent_{n}", 0, d) for n, d in enumerate(first)]
    events += [decided(n + 4, f"agent_{n}", 1, d) for n, d in enumerate(last)]
    path = tmp_path / "u.jsonl"
    transcript(path, [*events, Outcome(prediction=prediction, gold="favor"),
                      RunFinished(status="completed", stop_reason="done")])
    facts = facts_of(load(path))
    assert (facts.flipped, facts.disagree, facts.rounds, facts.messages) == (flipped, disagree, 2, 6)


GOLD = ["favor", "against"] * 6
RIGHT_A = [1, 1, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1]  # a is right on 8 of 12
RIGHT_B = [1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1]  # b on 11: right where a is, and on 3 more


def answers(right: list[int]) -> list[str]:
    return [g if r else {"favor": "against", "against": "favor"}[g] for g, r in zip(GOLD, right)]


def test_paired_figures_are_those_of_moot_compare_and_equal_scipy():
    import numpy as np
    from scipy import stats as scipy_stats

    units = [Scored(0, str(n), g, x, y) for n, (g, x, y) in enumerate(zip(GOLD, answers(RIGHT_A), answers(RIGHT_B)))]
    found = paired_classification(units, ("favor", "against"), "accuracy", differ=3)
    a, b = np.array(RIGHT_A, float), np.array(RIGHT_B, float)
    assert (found.a.value, found.b.value) == (pytest.approx(8 / 12), pytest.approx(11 / 12))
    assert found.difference.value == pytest.approx(-3 / 12)  # a − b, as moot compare A B
    paired = scipy_stats.bootstrap((a, b), lambda x, y, axis=-1: x.mean(axis) - y.mean(axis), paired=True,
                                   vectorized=True, n_resamples=2000, method="percentile",
                                   rng=np.random.default_rng(20240229))
    draws = paired.confidence_interval
    assert (found.difference.low, found.difference.high) == (pytest.approx(draws.low), pytest.approx(draws.high))
    alone = scipy_stats.bootstrap((a,), np.mean, vectorized=True, n_resamples=2000, method="percentile",
                                  rng=np.random.default_rng(20240229)).confidence_interval
    assert (found.a.low, found.a.high) == (pytest.approx(alone.low), pytest.approx(alone.high))
    order = sorted(range(12), key=str)  # the units as moot resamples them: by id
    dist = scipy_stats.bootstrap((a[order], b[order]), lambda x, y, axis=-1: x.mean(axis) - y.mean(axis), paired=True,
                                 vectorized=True, n_resamples=2000, rng=np.random.default_rng(20240229)).bootstrap_distribution
    dist = np.round(dist, 12)  # a floating residue of zero is zero
    side = min(np.sum(dist <= 0), np.sum(dist >= 0))
    assert f"paired bootstrap test over items (B = 2000, seed 20240229): p = {min(1, 2 * (1 + side) / 2001):.3f} " \
        f"({side} of 2000 draws past zero)" in found.test
    assert "12 paired, 0 dropped" in found.test and found.differ == 3
    assert classification(GOLD, answers(RIGHT_A), ("favor", "against"), "accuracy") == found.a
    assert found.a.interval.endswith(" (12 items: too few)")  # flagged where the number is shown


def test_paired_measures_have_a_paired_bootstrap_and_wilcoxon():
    from scipy import stats as scipy_stats

    a, b = [3.0, 5.0, 6.0, 2.0, 7.0, 4.0], [4.0, 7.0, 6.0, 5.0, 9.0, 4.5]
    found = paired_means("score", a, b)
    assert found.difference.value == pytest.approx(sum(a) / 6 - sum(b) / 6) and found.differ == 5
    assert found.difference.low is not None and found.difference.low < found.difference.value < found.difference.high
    assert f"p = {scipy_stats.wilcoxon(a, b).pvalue:.3f}" in found.test


def test_the_cli_and_the_compare_page_print_one_signed_difference(tmp_path, capsys):
    """Δ = A − B in both: `moot compare A B` and the viewer's page comparing a=A with b=B."""
    import re

    from moot.viewer.pages import Pages

    (tmp_path / "cola.yaml").write_text(COLA, encoding="utf-8")
    runs = tmp_path / "runs"
    cli(tmp_path / "cola.yaml", "--dataset", stance_dataset(tmp_path / "data", "s", {"s2"}), "--out", runs / "better",
        "--quiet")
    # The same items, two more answered wrong: a copy of the run with those rows' predictions changed
    # (a second dataset would differ in content, and compare rightly refuses that).
    shutil.copytree(runs / "better", runs / "worse")
    rows = [json.loads(line) for line in (runs / "worse" / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in rows:
        if row["id"] in ("s3", "s5"):
            row["prediction"] = next(label for label in ("favor", "against", "neutral") if label != row["gold"])
    (runs / "worse" / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    capsys.readouterr()
    assert main(["compare", str(runs / "better"), str(runs / "worse"), "--metric", "accuracy"]) == 0
    shown = capsys.readouterr().out
    assert "Δ = arm − B" in shown
    table = [line.strip("| ").split(" | ") for line in shown.splitlines() if line.startswith(("| arm", "| A:"))]
    printed = dict(zip(*table))["Δ = arm − B"]
    assert printed == "+0.333"  # 5/6 − 3/6
    pages = Pages(Root(runs))
    try:
        html = pages.compare_page(ServerLinks(), PurePosixPath("better"), PurePosixPath("worse"))
    finally:
        pages.close()
    assert "Δ = a − b" in html
    row = next(r for r in re.findall(r"<tr>(.*?)</tr>", html, re.S) if "accuracy" in r)
    cells = [re.sub(r"<[^>]+>", " ", c).split() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[2][0] == printed


def test_an_undefined_metric_says_why_instead_of_a_number():
    found = classification(["favor", "maybe"], ["favor", "favor"], ("favor", "against"), "macro_f1")
    assert found.value is None and "'maybe'" in found.method


def test_a_large_run_shows_its_point_estimate_until_its_interval_is_computed():
    import threading

    gate = threading.Event()
    intervals = Intervals()
    try:
        def full():
            gate.wait(10)
            return classification(GOLD, answers(RIGHT_A), ("favor", "against"), "accuracy")

        quick = point(GOLD, answers(RIGHT_A), ("favor", "against"), "accuracy")
        first = intervals.figure("run", 5000, full, lambda: quick)
        assert first.pending and first.value == pytest.approx(8 / 12) and first.interval == ""
        gate.set()
        deadline = time.monotonic() + 10
        while (done := intervals.figure("run", 5000, full, lambda: quick)).pending and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not done.pending and done.interval != "" and done.value == first.value
    finally:
        intervals.close()


# ------------------------------------------------------------------------------------------ links
def test_bundle_links_are_relative_files_and_server_links_urls():
    links = BundleLinks(PurePosixPath("r/exp/arm a/index.html"))
    assert links.runs() == "../../../index.html"
    assert links.unit(PurePosixPath("exp/arm a"), "s1") == "u/s1.html"
    assert links.run(PurePosixPath("other"), Query(show="wrong", page=2)) == "../../other/show-wrong-p2.html"
    assert links.static("viewer.js") == "../../../static/viewer.js"
    assert links.compare(PurePosixPath("a"), PurePosixPath("b")) is None  # not in this bundle
    assert query_file(Query(gold="<x>")).startswith("gold-") and "<" not in query_file(Query(gold="<x>"))
    server = ServerLinks()
    assert server.run(PurePosixPath("exp/arm a"), Query(show="wrong")) == "/run/exp/arm%20a?show=wrong"
    assert server.unit(PurePosixPath("a/b"), "x&y") == "/unit/a/b?u=x%26y"


# ------------------------------------------------------------------------------------------ command line
def test_a_missing_folder_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["view", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no such folder" in err


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() + str(p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_serving_every_page_writes_nothing_under_the_folder(cola):
    top = cola.parent
    before = digest(top)
    server = Viewer(top)
    try:
        for page in ("/", "/run/cola", "/run/cola?show=flipped", "/unit/cola?u=s1", "/calls/cola?u=s1",
                     "/call/cola?u=s1&seq=2", "/scenario/cola", "/compare?a=cola&b=cola"):
            with urllib.request.urlopen(server.base + page, timeout=30) as response:
                assert response.status == 200, page
    finally:
        code, seconds = server.stop()
    assert code == 0 and seconds < 1.0
    assert digest(top) == before
