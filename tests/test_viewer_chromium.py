"""`moot view` in a real browser: headless Chromium driven by Selenium against `moot view DIR` started
as a user starts it, over runs of every protocol made with the scripted model.

The runs list (filters, sorting, keyboard), a run's page (filters, metrics, paging), a unit page of
each protocol (as its view describes it, calls behind toggles), a run being written (live within
1 s, the turn being generated, a torn line as pending), a comparison, the static bundle from disk,
the 390 px layout, right-to-left and CJK text, and the security cases (escaping, CSP, paths,
read-only, the token, a damaged transcript). Needs Debian's chromium and chromium-driver.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from viewer_support import (
    ARABIC, CHROMIUM, CJK, CONFERENCE, SCRIPT, Viewer, browser, css, lines_of, make_runs, start_slow_run, texts,
    wait_for,
)

from moot.log.events import Message
from moot.log.transcript import load

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (apt-get install -y chromium chromium-driver)")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    return make_runs(tmp_path_factory.mktemp("viewer"))


@pytest.fixture(scope="module")
def viewer(runs):
    server = Viewer(runs["conference"].parent)
    yield server
    code, seconds = server.stop()
    assert code == 0 and seconds < 1.0, (code, seconds)


@pytest.fixture(autouse=True)
def quiet_log(request):
    """Each test starts on a blank page with an empty console log (a server an earlier test stopped
    leaves its page's stream errors there)."""
    if "browser" in request.fixturenames:
        driver = request.getfixturevalue("browser")
        driver.get("about:blank")
        driver.get_log("browser")


def show(browser, url: str, selector: str, timeout: float = 15.0):
    """Open `url` and wait until `selector` matches (a loaded machine can be slow to answer)."""
    browser.get(url)
    return wait_for(lambda: css(browser, selector), timeout)


def visible_rows(browser, table="table.runs"):
    return [r for r in css(browser, f"{table} tbody tr[data-nav]") if r.is_displayed()]


def errors_of(browser) -> list[str]:
    """Console errors but the missing favicon."""
    return [e["message"] for e in browser.get_log("browser")
            if e["level"] == "SEVERE" and "favicon" not in e["message"]]


def fetch(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, str]]:
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode("utf-8"), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8"), dict(exc.headers)


# ------------------------------------------------------------------------------------------ runs list
def test_runs_list_shows_every_run_and_filters_sorts_and_searches(viewer, runs, browser):
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    browser.get(viewer.url)
    rows = visible_rows(browser)
    assert len(rows) == len(runs)
    names = {r.find_element("css selector", "td:nth-child(2) a").text for r in rows}
    assert names == set(runs)
    cola = next(r for r in rows if r.find_element("css selector", "td:nth-child(2) a").text == "cola-a")
    assert "6/6 items" in cola.text and "finished" in cola.text and "macro_f1" in cola.text

    Select(css(browser, "select[name=protocol]")[0]).select_by_visible_text("cola")
    assert sorted(r.find_element("css selector", "td:nth-child(2) a").text for r in visible_rows(browser)) == \
        ["cola-a", "cola-b"]
    assert css(browser, "#runs-count")[0].text == f"2 of {len(runs)} runs"
    Select(css(browser, "select[name=protocol]")[0]).select_by_visible_text("any")
    search = css(browser, "input[name=q]")[0]
    search.send_keys("batch")
    assert [r.find_element("css selector", "td:nth-child(2) a").text for r in visible_rows(browser)] == ["batch"]
    search.send_keys(Keys.ESCAPE)
    search.clear()
    search.send_keys(" ")
    search.send_keys(Keys.BACKSPACE)

    units = next(h for h in css(browser, "table.runs th") if h.text == "Units")
    units.click()
    done = [int(r.find_element("css selector", "td:nth-child(8)").get_attribute("data-value")) for r in visible_rows(browser)]
    assert done == sorted(done) and units.get_attribute("aria-sort") == "ascending"
    assert errors_of(browser) == []


def test_server_side_filters_work_without_script(viewer, runs):
    status, page, _ = fetch(viewer.base + "/?protocol=conference")
    assert status == 200 and page.count("<tr data-nav") == 2 and "cola-a" not in page


def test_keyboard_moves_through_rows_and_opens_one(viewer, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    browser.get(viewer.url)
    body = css(browser, "body")[0]
    ActionChains(browser).send_keys_to_element(body, "j").send_keys("j").perform()
    selected = css(browser, "tr.selected")
    assert len(selected) == 1 and selected[0] == visible_rows(browser)[1]
    link = selected[0].find_element("css selector", "td:nth-child(2) a")
    assert browser.switch_to.active_element == link
    name = link.text
    ActionChains(browser).send_keys("\n").perform()
    wait_for(lambda: "/run/" in browser.current_url)
    assert browser.current_url.endswith(f"/run/{name}")
    ActionChains(browser).send_keys("t").perform()
    dark = browser.execute_script("return document.documentElement.classList.contains('dark')")
    light = browser.execute_script("return document.documentElement.classList.contains('light')")
    assert dark != light  # one of them chosen now, and kept for the next page
    ActionChains(browser).send_keys("/").perform()
    assert browser.switch_to.active_element.get_attribute("name") == "q"
    run = browser.current_url
    ActionChains(browser).send_keys(Keys.ESCAPE).send_keys("j").send_keys("\n").perform()
    wait_for(lambda: "/unit/" in browser.current_url)
    first = browser.current_url
    for key, moved in (("n", lambda: browser.current_url != first), ("p", lambda: browser.current_url == first),
                       ("u", lambda: browser.current_url == run), ("u", lambda: browser.current_url == viewer.url)):
        ActionChains(browser).send_keys(key).perform()
        assert wait_for(moved), (key, browser.current_url)  # u: up one level (the unit's run, then the list)


# ------------------------------------------------------------------------------------------ a run
def test_run_page_metrics_equal_scikit_learn_and_filters_narrow_the_units(viewer, runs, browser):
    from sklearn.metrics import accuracy_score, f1_score

    rows = list(lines_of(runs["cola-b"] / "results.jsonl"))
    gold, pred = [r["gold"] for r in rows], [r["prediction"] for r in rows]
    browser.get(f"{viewer.base}/run/cola-b")
    assert css(browser, ".headline .big strong")[0].text == f"{f1_score(gold, pred, average='macro'):.3f}"
    report = css(browser, "table.compact")[0].text
    assert f"accuracy {accuracy_score(gold, pred):.3f}" in report
    cells = [int(c.text) for c in css(browser, "table.confusion td")]
    assert sum(cells) == len(rows)
    assert len(visible_rows(browser, "table.units")) == len(rows)

    css(browser, "nav.filterbar a[title^='scored units predicted wrong']")[0].click()
    wait_for(lambda: "show=wrong" in browser.current_url)
    wrong = visible_rows(browser, "table.units")
    assert len(wrong) == sum(g != p for g, p in zip(gold, pred)) == 3
    assert all(r.find_element("css selector", ".bad") for r in wrong)
    targets = {r.find_element("css selector", "td:nth-child(2)").text for r in wrong}
    assert targets <= {"masks", "taxes"} and targets  # the transcripts' facts, read for the page shown

    next(a for a in css(browser, ".filterbar a") if a.text == "neutral").click()
    wait_for(lambda: "gold=neutral" in browser.current_url)
    assert [r.find_element("css selector", "td:nth-child(4)").text for r in visible_rows(browser, "table.units")] \
        == ["neutral"]  # wrong and gold neutral: s3
    status, page, _ = fetch(f"{viewer.base}/run/cola-b?show=right")
    assert page.count('<tr data-nav class="right">') == 3


# ------------------------------------------------------------------------------------------ unit pages
SECTIONS = {  # what each protocol's view heads its sections with (moot.views.unit)
    "conference": ["Topic 1/2:", "Topic 2/2:"],
    "cola-a": ["Analysis", "Debate", "Conclusion", "Outcome"],
    "debate": ["Answer", "Debate", "Outcome"],
}


@pytest.mark.parametrize("name", ["conference", "cola-a", "s2mad", "negotiation", "debate"])
def test_a_unit_page_of_each_protocol_reads_as_its_view_and_opens_its_calls(viewer, runs, browser, name):
    folder = runs[name]
    first = json.loads((folder / "results.jsonl").read_text().splitlines()[0])
    transcript = load(folder / first["transcript"])
    key = first["transcript"].removesuffix(".jsonl")
    entries = show(browser, f"{viewer.base}/unit/{name}?u={key}", "article.entry")
    assert len(entries) == len(transcript.of_type(Message))
    shown = sorted((int(e.get_attribute("id").removeprefix("turn-")), e.get_attribute("data-speaker")) for e in entries)
    assert shown == [(m.turn, m.speaker) for m in transcript.messages]  # in sections, as the view groups them
    headings = [h.text for h in css(browser, ".timeline h2")]
    for expected in SECTIONS.get(name, []):
        assert any(h.startswith(expected) for h in headings), (expected, headings)
    if transcript.outcome is not None:
        assert transcript.outcome.prediction in css(browser, "p.lede")[0].text

    toggle = css(browser, "details.calls")[0]
    toggle.find_element("css selector", "summary").click()
    first_call = transcript.calls[0]
    sent = first_call.messages[-1]["content"]
    fragment = wait_for(lambda: toggle.find_elements("css selector", "section.call"))
    text = fragment[0].text
    assert str(sent).strip().splitlines()[0][:60] in text and first_call.reply.strip()[:40] in text
    assert f"{first_call.usage.prompt_tokens}+{first_call.usage.completion_tokens} tokens" in text
    assert errors_of(browser) == []


def test_the_scenario_and_prompts_as_sent_are_one_click_away(viewer, runs, browser):
    browser.get(f"{viewer.base}/unit/cola-a?u=s1")
    next(a for a in css(browser, ".unitnav a") if a.text == "scenario and prompts").click()
    wait_for(lambda: "/scenario/cola-a" in browser.current_url)
    assert "protocol: cola" in css(browser, "pre.yaml")[0].text
    transcript = load(runs["cola-a"] / "s1.jsonl")
    system = transcript.calls[0].messages[0]["content"]
    assert system.strip().splitlines()[0] in css(browser, "details.prompt pre")[0].text


def test_a_conference_shows_topics_rounds_verdicts_and_scores(viewer, runs, browser):
    browser.get(f"{viewer.base}/unit/conference?u=conference")
    badges = [b.text for b in css(browser, ".badge.verdict")]
    assert badges == [v["verdict"] for v in lines_of(runs["conference"] / "conference.jsonl") if v["type"] == "verdict"]
    assert len(css(browser, "svg.score-chart rect.bar")) == 10 * len(
        [e for e in lines_of(runs["conference"] / "conference.jsonl") if e["type"] == "score"])
    assert any(h.text == "ROUND 2" for h in css(browser, ".timeline .round"))  # MORE_DEBATE: a second round
    assert css(browser, "details.fold")[0].get_attribute("open") is None  # the setup folded


# ------------------------------------------------------------------------------------------ security
def test_nothing_a_model_or_scenario_wrote_runs_as_script(viewer, runs, browser):
    for page in ("/", "/run/conference", "/unit/conference?u=conference", "/scenario/conference",
                 "/calls/conference?u=conference"):
        browser.get(viewer.base + page)
        assert browser.execute_script("return window.__pwned") is None
        assert css(browser, "img") == []
        assert [s.get_attribute("src").rsplit("/", 1)[-1] for s in css(browser, "script")] == ["viewer.js"]
    browser.get(viewer.base + "/unit/conference?u=conference")
    assert SCRIPT in browser.title
    assert any(SCRIPT in e.text for e in css(browser, "article.entry .content"))


def test_every_response_forbids_inline_scripts_and_the_server_only_reads(viewer):
    status, _, headers = fetch(viewer.base + "/")
    assert status == 200
    policy = headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "default-src 'none'" in policy
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"] == "DENY"
    for method in ("POST", "PUT", "DELETE"):
        status, _, refused = fetch(viewer.base + "/run/cola-a", method)
        assert status == 405 and "POST" not in refused["Allow"]
        assert refused["Content-Security-Policy"] == policy  # the router's own answers pass the guard too
    assert fetch(viewer.base + "/", headers={"Host": "evil.example:80"})[0] == 421  # DNS rebinding


@pytest.mark.parametrize("path", ["/run/..%2F..%2Fetc", "/run/%2e%2e/etc", "/run/cola-a%2F..%2F..", "/run/.hidden",
                                  "/unit/cola-a/%2e%2e?u=s1", "/run/cola-a%5C..%5C..", "/run/%00",
                                  "/compare?a=../x&b=cola-a", "/compare?a=cola-a&b=cola-a%252F..%252F.."])
def test_no_path_outside_the_folder_is_reached(viewer, path):
    status, page, _ = fetch(viewer.base + path)
    assert status in (403, 404), (path, status)
    assert "root:" not in page


def test_a_symbolic_link_is_refused(runs, tmp_path):
    folder = tmp_path / "linked"
    folder.mkdir()
    (folder / "outside").symlink_to(runs["cola-a"], target_is_directory=True)
    (folder / "inside").symlink_to(runs["cola-a"] / "s1.jsonl")
    server = Viewer(folder)
    try:
        assert fetch(server.base + "/run/outside")[0] == 403
        assert fetch(server.base + "/unit/outside?u=s1")[0] == 403
        assert fetch(server.base + "/run/inside")[0] == 403
        status, page, _ = fetch(server.base + "/")
        assert status == 200 and "<tr data-nav" not in page  # links are not listed either
    finally:
        assert server.stop()[0] == 0


def test_another_address_needs_the_printed_token(runs):
    server = Viewer(runs["conference"].parent, "--host", "0.0.0.0")
    try:
        assert "?token=" in server.url
        port = server.base.rsplit(":", 1)[1]
        bare = f"http://127.0.0.1:{port}"
        assert fetch(bare + "/")[0] == 401 and fetch(bare + "/static/viewer.js")[0] == 401
        token = server.url.split("token=", 1)[1]
        assert fetch(bare + "/?token=wrong")[0] == 401
        status, _, headers = fetch(f"{bare}/?token={token}")
        assert status == 200 and "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
        assert fetch(bare + "/run/cola-a", headers={"Cookie": f"moot_view_token={token}"})[0] == 200
    finally:
        assert server.stop()[0] == 0


def test_a_damaged_transcript_names_its_line_and_the_rest_keeps_working(runs, tmp_path, browser):
    import shutil

    folder = tmp_path / "damaged"
    shutil.copytree(runs["cola-a"], folder / "cola")
    path = folder / "cola" / "s3.jsonl"
    lines = path.read_text().splitlines()
    lines[4] = lines[4][:40] + "<script>window.__pwned=3</script>"
    path.write_text("\n".join(lines) + "\n")
    (folder / "cola" / "s4.jsonl").write_text("")  # empty
    server = Viewer(folder)
    try:
        alert = show(browser, f"{server.base}/unit/cola?u=s3", ".damaged")[0].text
        assert "s3.jsonl:5: garbled event" in alert and browser.execute_script("return window.__pwned") is None
        assert css(browser, "tr.bad-line th")[0].text == "5"
        assert "has no events" in show(browser, f"{server.base}/unit/cola?u=s4", ".damaged")[0].text
        assert len(show(browser, f"{server.base}/unit/cola?u=s1", "article.entry")) == 7
        show(browser, f"{server.base}/run/cola", "table.units")
        assert len(visible_rows(browser, "table.units")) == 6
        show(browser, server.url, "table.runs")
        assert len(visible_rows(browser)) == 1
    finally:
        assert server.stop()[0] == 0


# ------------------------------------------------------------------------------------------ live
def test_a_run_being_written_updates_its_pages_within_a_second(tmp_path, browser):
    folder = tmp_path / "live"
    folder.mkdir()
    scenario = tmp_path / "conference.yaml"
    scenario.write_text(CONFERENCE.replace("max_rounds_per_topic: 2", "max_rounds_per_topic: 1"), encoding="utf-8")
    server = Viewer(folder)
    run = start_slow_run(scenario, folder / "conf", 0.06)
    try:
        transcript = folder / "conf" / "conference.jsonl"
        wait_for(lambda: transcript.exists() and transcript.stat().st_size > 0, 60)
        browser.get(server.url)
        wait_for(lambda: "running" in browser.page_source, 10)
        browser.get(f"{server.base}/unit/conf?u=conference")
        wait_for(lambda: css(browser, "#live-state.on"), 10)
        generating = wait_for(lambda: texts(browser, "article.entry.generating"), 20)
        assert "generating" in generating[0]
        latencies = []
        for _ in range(3):
            count = len(css(browser, "article.entry:not(.generating)"))
            recorded = wait_for(lambda: sum(1 for e in lines_of(transcript) if e["type"] == "message") > count, 30)
            assert recorded
            appended = time.time()
            wait_for(lambda: len(css(browser, "article.entry:not(.generating)")) > count, 5, every=0.02)
            latencies.append(time.time() - appended)
        print(f"live update latency: {', '.join(f'{s:.2f}s' for s in latencies)}")
        assert max(latencies) <= 1.0, latencies
        assert run.wait(timeout=120) == 0, run.stderr.read() if run.stderr else ""
        wait_for(lambda: "all topics closed" in "".join(texts(browser, "p.lede")), 10)
        assert css(browser, "article.entry.generating") == []
        assert errors_of(browser) == []
    finally:
        if run.poll() is None:
            run.kill()
        assert server.stop()[0] == 0


def test_a_torn_last_line_shows_as_pending_then_as_the_turn(runs, tmp_path, browser):
    import shutil

    folder = tmp_path / "torn"
    shutil.copytree(runs["cola-a"], folder / "cola")
    path = folder / "cola" / "s2.jsonl"
    complete = path.read_text().splitlines(keepends=True)
    keep = [n for n, line in enumerate(complete) if json.loads(line)["type"] == "message"][-1]  # the judger's turn
    path.write_text("".join(complete[:keep - 1]) + complete[keep - 1] + complete[keep][:30])
    server = Viewer(folder)
    try:
        browser.get(f"{server.base}/unit/cola?u=s2")
        assert texts(browser, "p.pending")[0].startswith("A line is being written")
        assert css(browser, ".damaged") == [] and len(css(browser, "article.entry")) == 6
        wait_for(lambda: css(browser, "#live-state.on"), 10)
        with open(path, "a") as f:
            f.write(complete[keep][30:])
        wait_for(lambda: len(css(browser, "article.entry")) == 7, 3)
        assert css(browser, "p.pending") == []
    finally:
        assert server.stop()[0] == 0


# ------------------------------------------------------------------------------------------ compare
def test_compare_pairs_units_and_opens_both_transcripts(viewer, runs, browser):
    a = {r["id"]: r for r in lines_of(runs["cola-a"] / "results.jsonl")}
    b = {r["id"]: r for r in lines_of(runs["cola-b"] / "results.jsonl")}
    differ = sorted(i for i in a if a[i]["prediction"] != b[i]["prediction"])
    browser.get(viewer.url)
    for name in ("cola-a", "cola-b"):
        css(browser, f"input.pick[value='{name}']")[0].click()
    css(browser, "#compare-picked")[0].click()
    wait_for(lambda: "/compare?" in browser.current_url)
    if "a=cola-b" in browser.current_url:  # a is the run listed first
        a, b = b, a
    paired = wait_for(lambda: css(browser, "table.paired tbody tr"))[0].text
    right_a = sum(r["prediction"] == r["gold"] for r in a.values()) / 6
    right_b = sum(r["prediction"] == r["gold"] for r in b.values()) / 6
    assert paired.startswith(f"accuracy {right_a:.3f} ["), paired  # each side with its interval
    assert f" {right_b:.3f} [" in paired and f" {right_a - right_b:+.3f} [" in paired
    assert "paired bootstrap test over items (B = 2000, seed 20240229): p = " in paired and " · MDE" in paired
    assert "6 paired, 0 dropped" in paired
    rows = visible_rows(browser, "table.pairs")
    assert sorted(r.find_element("css selector", "td").text for r in rows) == differ == ["s3", "s5"]
    rows[0].find_element("css selector", "a").click()
    wait_for(lambda: "/compare-unit" in browser.current_url)
    columns = css(browser, ".side-by-side .column")
    assert len(columns) == 2 and all(c.find_elements("css selector", "article.entry") for c in columns)
    assert errors_of(browser) == []


def test_compare_the_units_of_a_batch_by_seed(viewer):
    status, page, _ = fetch(viewer.base + "/compare?a=batch&b=conference&show=both")
    assert status == 200 and "Paired on" in page


# ------------------------------------------------------------------------------------------ bundle
def test_the_bundle_opens_from_disk_with_the_same_pages(runs, tmp_path, browser):
    from moot.cli import main

    out = tmp_path / "site"
    assert main(["view", str(runs["conference"].parent), "--bundle", str(out)]) == 0
    browser.get((out / "index.html").as_uri())
    assert len(visible_rows(browser)) == len(runs)
    assert browser.execute_script("return document.documentElement.classList.contains('js')")
    next(a for a in css(browser, "table.runs a") if a.text == "cola-b").click()
    wait_for(lambda: browser.current_url.endswith("/r/cola-b/index.html"))
    wrong = next(a for a in css(browser, "nav.filterbar a") if a.text == "wrong")
    target = wrong.get_attribute("href")
    wrong.click()
    wait_for(lambda: browser.current_url == target)  # the filtered page, not the one before it
    wait_for(lambda: browser.execute_script("return document.readyState") == "complete")
    assert len(visible_rows(browser, "table.units")) == 3
    visible_rows(browser, "table.units")[0].find_element("css selector", "a").click()
    wait_for(lambda: "/u/" in browser.current_url)
    toggle = css(browser, "details.calls")[0]
    toggle.find_element("css selector", "summary").click()
    toggle.find_element("css selector", "a").click()
    wait_for(lambda: ".calls.html#call-" in browser.current_url)
    assert css(browser, "section.call")
    browser.get((out / "index.html").as_uri())
    css(browser, "input[name=q]")[0].send_keys("cola")
    assert len(visible_rows(browser)) == 2
    assert errors_of(browser) == []
    assert browser.execute_script("return window.__pwned") is None


# ------------------------------------------------------------------------------------------ layout
def test_390px_wide_the_conversation_comes_first_and_nothing_overflows(viewer, browser):
    browser.set_window_size(390, 844)
    try:
        for page, selector in (("/", "table.runs"), ("/run/cola-a", "table.units"),
                               ("/unit/conference?u=conference", "article.entry"),
                               ("/compare?a=cola-a&b=cola-b&show=both", "table.pairs")):
            show(browser, viewer.base + page, selector)
            width, viewport = browser.execute_script(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert width <= viewport, (page, width, viewport, wider(browser))
        first = show(browser, viewer.base + "/unit/conference?u=conference", "article.entry")[0]
        top = browser.execute_script("return arguments[0].getBoundingClientRect().top", first)
        assert top < 844, top  # the first turn is on the first screen: the setup is folded
    finally:
        browser.set_window_size(1280, 900)


def wider(browser) -> list[str]:
    """The elements wider than the viewport that no scrolling box holds (what makes a page scroll sideways)."""
    return browser.execute_script("""
        const vw = document.documentElement.clientWidth, out = [];
        const held = e => { for (let p = e.parentElement; p; p = p.parentElement)
            if (getComputedStyle(p).overflowX !== 'visible') return true; return false; };
        for (const e of document.querySelectorAll('body *')) {
            const r = e.getBoundingClientRect();
            if (r.right > vw + 0.5 && r.width > 0 && !held(e)) out.push(e.tagName + '.' + e.className);
        }
        return out.slice(0, 8);""")


def test_right_to_left_and_cjk_text_render_in_their_direction(viewer, browser):
    browser.get(viewer.base + "/unit/conference?u=conference")
    contents = [e for e in css(browser, "article.entry .content") if ARABIC in e.text]
    assert contents
    headings = [h for h in css(browser, ".timeline h2") if CJK in h.text]
    assert headings and headings[0].size["width"] > 0
    arabic_only = [h for h in css(browser, "nav[aria-label=Contents] li") if h.text.startswith("Topic 2/2")]
    assert arabic_only
    # a paragraph that starts with Arabic reads right to left; one that starts with Latin left to right
    direction = browser.execute_script(
        "const p = document.createElement('div'); p.className = 'content'; p.dir = 'auto';"
        "p.textContent = arguments[0]; document.body.appendChild(p);"
        "const d = getComputedStyle(p).direction; p.remove(); return d;", ARABIC)
    assert direction == "rtl"
    assert all(e.get_attribute("dir") == "auto" for e in contents)
