"""The viewer's layout in headless Chromium, 1,600 px and 390 px wide: every page of `moot view`
(the runs list with eight experiments, an experiment's page, a run, a unit, its scenario, two runs
and two arms compared) with no sideways scrolling, no table cell cut off by the viewport or its
scrolling box, no page taller than its content, and the width a wide window offers used. Each page
is saved as a screenshot: to $MOOT_SCREENSHOTS when set, else to a folder under pytest's tmp
(its path printed). Needs Debian's chromium and chromium-driver.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from viewer_support import CHROMIUM, Viewer, browser, css, make_runs, stance_dataset, wait_for

from moot.cli import main

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (apt-get install -y chromium chromium-driver)")

EXPERIMENTS = 8
WIDTHS = (1600, 390)
HEIGHT = 900
PAGES = {  # name: (path, an element the page has)
    "runs": ("/", "table.runs"),
    "experiment": ("/experiment/exp-1", "table.findings"),
    "run": ("/run/cola-a", "table.units"),
    "unit": ("/unit/conference?u=conference", "article.entry"),
    "scenario": ("/scenario/cola-a", "pre.yaml"),
    "compare-runs": ("/compare?a=cola-a&b=cola-b&show=both", "table.paired"),
    "compare-arms": ("/compare?a=exp-1/direct&b=exp-1/cola&show=both", "table.paired"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Runs of every protocol and EXPERIMENTS experiments of two arms, two repeats (scripted)."""
    top = tmp_path_factory.mktemp("layout")
    made = make_runs(top)
    folder = made["conference"].parent
    data = stance_dataset(top / "data", "items", {"s2", "s5"})
    (top / "exp.yaml").write_text(
        "experiment: arms\narms:\n  - {name: direct, scenario: cola_direct}\n  - {name: cola, scenario: cola}\n"
        f"datasets: [{data}]\nmodels: [scripted]\nrepeats: 2\ncompare: {{reference: direct}}\n", encoding="utf-8")
    assert main(["run", str(top / "exp.yaml"), "--quiet", "--out", str(folder / "exp-1")]) == 0
    for n in range(2, EXPERIMENTS + 1):
        shutil.copytree(folder / "exp-1", folder / f"exp-{n}")
    return folder


@pytest.fixture(scope="module")
def viewer(runs):
    server = Viewer(runs)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    given = os.environ.get("MOOT_SCREENSHOTS")
    folder = Path(given) if given else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def viewport(browser, width: int, height: int) -> None:
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})


MEASURE = """
const vw = document.documentElement.clientWidth, cut = [];
const box = e => { for (let p = e.parentElement; p; p = p.parentElement)
    if (getComputedStyle(p).overflowX !== 'visible') return p; return null; };
for (const cell of document.querySelectorAll('td, th')) {
    const r = cell.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const holder = box(cell);
    const right = holder ? Math.min(vw, holder.getBoundingClientRect().left + holder.clientWidth) : vw;
    if (r.right > right + 1) cut.push(`${cell.tagName} ${cell.textContent.trim().slice(0, 30)} ${r.right} > ${right}`);
}
let bottom = 0;
for (const e of document.querySelectorAll('main *')) {
    const r = e.getBoundingClientRect();
    if (r.height > 0) bottom = Math.max(bottom, r.bottom + window.scrollY);
}
return {scroll: document.documentElement.scrollWidth, viewport: vw, cut: cut.slice(0, 8),
        height: document.documentElement.scrollHeight, bottom: bottom,
        main: document.querySelector('main').getBoundingClientRect().width};
"""


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", PAGES)
def test_every_page_fits_its_window_with_no_cell_cut_off(viewer, browser, shots, name, width):
    path, selector = PAGES[name]
    viewport(browser, width, HEIGHT)
    browser.get(viewer.base + path)
    wait_for(lambda: css(browser, selector), 15)
    found = browser.execute_script(MEASURE)
    assert found["viewport"] == width or found["viewport"] > width - 20  # (a scroll bar's width at most)
    assert found["scroll"] <= found["viewport"], (name, width, found)
    assert found["cut"] == [], (name, width, found["cut"])
    assert found["height"] <= max(HEIGHT, found["bottom"] + 64), (name, width, found)  # nothing but content below
    if width == 1600:  # the width a wide window offers is used (not a fixed column of about 1,130 px)
        wide = name not in ("unit", "scenario")  # pages of text keep a readable line length
        assert found["main"] > (1500 if wide else 1000), (name, found["main"])
    viewport(browser, width, min(int(found["height"]), 12_000))  # the whole page in one screenshot
    shot = shots / f"viewer-{name}-{width}.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 5_000
    print(f"screenshot: {shot}")
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_eight_experiments_leave_the_runs_table_on_the_first_screen(viewer, browser):
    viewport(browser, 1600, HEIGHT)
    try:
        browser.get(viewer.base + "/")
        table = wait_for(lambda: css(browser, "table.runs"))[0]
        assert len(css(browser, "table.experiments-list tbody tr")) == EXPERIMENTS
        top = browser.execute_script("return arguments[0].getBoundingClientRect().top + window.scrollY", table)
        assert top < HEIGHT, top
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_390px_wide_a_comparisons_rows_are_compact_cards(viewer, browser):
    viewport(browser, 390, 844)
    try:
        browser.get(viewer.base + PAGES["compare-runs"][0])
        rows = wait_for(lambda: css(browser, "table.paired tbody tr"))
        heights = [r.size["height"] for r in rows]
        assert max(heights) < 260, heights  # a card: three figures with their notes and the test (was ~350 px)
        tests = css(browser, "table.paired td[data-label='paired test']")
        assert tests and all(t.is_displayed() and t.rect["x"] + t.rect["width"] <= 390 for t in tests)
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_an_experiments_page_links_its_cells_and_its_comparisons(viewer, browser, runs):
    browser.get(viewer.base + "/run/exp-1")  # an experiment's folder opens its page, not a 404
    wait_for(lambda: css(browser, "table.findings"))
    cells = [a.get_attribute("href") for a in css(browser, "table.cells a")]
    assert sorted(re.sub(r".*/run/", "", c) for c in cells) == sorted(
        p.parent.relative_to(runs).as_posix() for p in (runs / "exp-1").rglob("run.json"))
    (compare,) = css(browser, ".compare-links a")
    assert compare.text == "direct vs cola"
    compare.click()
    wait_for(lambda: css(browser, "table.paired"))
    assert "a=exp-1%2Fdirect" in browser.current_url and "b=exp-1%2Fcola" in browser.current_url
