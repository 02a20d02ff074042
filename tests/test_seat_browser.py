"""A person at a seat in the browser: `moot run --human SEAT --human-from browser` and `moot view`,
each started as a user starts them, and headless Chromium driven by Selenium on the seats' links.

Two people (a participant writing free turns, a judge choosing verdicts) in one scripted
conference, each on their own link; an empty turn confirmed or not; a seat whose time runs out
to its model; a run killed while a seat waits and continued with the same command and link; a
COLA judger's seat following the items of a dataset on one page; and
the safety cases (a seat's link answers only its seat and only from its own page, opens nothing
else on a token-protected address, and what a person types is kept exactly and shown inert).
Needs Debian's chromium and chromium-driver.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from viewer_support import CHROMIUM, ROOT, STANCES, Viewer, browser, css, stance_dataset, texts, wait_for

from moot.log.events import Human, Message, RunResumed
from moot.log.transcript import load
from moot.protocols.conference.events import Verdict

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (apt-get install -y chromium chromium-driver)")

SCENARIO = """\
title: A seat in the browser
task: Decide the test questions.
topics:
  - topic number 1
moderator: {name: Moderator}
participants:
  - {name: Alice, persona: Alice the tester.}
  - {name: Bob, persona: Bob the tester.}
judge: {name: Judge}
evaluator: {name: Evaluator}
models: {default: scripted}
limits: {max_rounds_per_topic: 2}
"""


class SeatedRun:
    """`moot run SCENARIO --human SEAT ... --human-from browser` as a user starts it; `links`: each
    seat's link as it printed it."""

    def __init__(self, scenario: Path | str, out: Path, *seats: str, extra: tuple[str, ...] = ()):
        argv = [sys.executable, "-m", "moot", str(scenario), "--out", str(out), "--quiet", "--human-from", "browser",
                *extra]
        for seat in seats:
            argv += ["--human", seat]
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        self.links: dict[str, str] = {}
        assert self.process.stdout is not None
        for _ in seats:
            line = self.process.stdout.readline()
            found = re.match(r"seat (\S+): take it in the browser at (/seat/\S+) on `moot view (.+)`", line)
            assert found, (line, self.process.stderr.read() if self.process.stderr else "")
            self.links[found.group(1)] = found.group(2)
            assert Path(found.group(3)) == out.parent

    def finish(self, timeout: float = 120) -> int:
        _, err = self.process.communicate(timeout=timeout)
        assert self.process.returncode == 0, err
        return self.process.returncode

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.communicate(timeout=60)


@contextmanager
def seated(folder: Path, scenario: Path | str, out: Path, *seats: str, extra: tuple[str, ...] = (),
           viewer: tuple[str, ...] = ()) -> Iterator[tuple[SeatedRun, Viewer]]:
    """A viewer over the folder's runs and a seated run in it; at the end the run is killed if it
    still runs and the viewer must stop cleanly."""
    server = Viewer(folder / "runs", *viewer)
    run = SeatedRun(scenario, out, *seats, extra=extra)
    try:
        yield run, server
    finally:
        run.kill()
        assert server.stop()[0] == 0


def ends_finished(run: SeatedRun, browser) -> None:
    """The run exits 0 and the page in front says so, with nothing in its console log."""
    run.finish()
    wait_for(lambda: state(browser) == "finished", 10)
    assert errors_of(browser) == []


@pytest.fixture(autouse=True)
def quiet_log(browser):
    """Each test starts with one blank tab and an empty console log (an earlier test's stopped
    server leaves its page's stream errors there)."""
    for handle in browser.window_handles[1:]:
        browser.switch_to.window(handle)
        browser.close()
    browser.switch_to.window(browser.window_handles[0])
    browser.get("about:blank")
    browser.get_log("browser")


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "conference.yaml").write_text(SCENARIO, encoding="utf-8")
    return tmp_path


def state(browser) -> str:
    """The seat panel's state (asking, sending, waiting, finished, stopped), as the page shows it now."""
    return browser.execute_script("var p = document.querySelector('section.seat-panel');"
                                  "return p ? p.getAttribute('data-state') : '';")


def entries(browser) -> list[tuple[str, str, str]]:
    """The conversation as the page shows it now: (speaker, source, text) of each turn (read at once:
    a live update may replace the elements between two reads)."""
    return [tuple(e) for e in browser.execute_script(
        "return Array.from(document.querySelectorAll('#unit-body article.entry')).map(function (e) {"
        " return [e.getAttribute('data-speaker'), e.getAttribute('data-source') || 'model', e.innerText]; });")]


def asked(browser, what: str = "form.seat-form", timeout: float = 60):
    """Wait until the seat asks (`what` in its form), and the panel's text."""
    wait_for(lambda: css(browser, f"#seat-panel {what}"), timeout)
    return texts(browser, "section.seat-panel")[0]


def choose(browser, option: str) -> None:
    button = wait_for(lambda: [b for b in css(browser, ".seat-choices button") if b.get_attribute("value") == option])
    button[0].click()


def shown_id(browser) -> str:
    """The id of the question the seat's page asks now."""
    return browser.execute_script("var i = document.querySelector('#seat-panel input[name=asked]');"
                                  "return i ? i.value : '';")


def pending_id(run: Path, seat: str) -> str:
    return json.loads((run / "seats" / f"{seat}.json").read_text())["id"]


def errors_of(browser) -> list[str]:
    return [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"]]


def post(url: str, fields: dict[str, str], origin: str | None) -> int:
    request = urllib.request.Request(url, data=urllib.parse.urlencode(fields).encode(), method="POST",
                                     headers={"Origin": origin} if origin else {})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")


def test_two_people_take_a_participant_and_the_judge_each_on_their_own_link(folder, browser):
    from selenium.webdriver.common.keys import Keys

    out = folder / "runs" / "conf"
    with seated(folder, folder / "conference.yaml", out, "Alice", "judge") as (run, server):
        assert set(run.links) == {"Alice", "judge"} and run.links["Alice"] != run.links["judge"]
        status, page = get(f"{server.base}/run/conf")
        assert status == 200 and all(link in page for link in run.links.values())  # the run's page lists them
        browser.get(server.base + run.links["judge"])
        judge = browser.current_window_handle
        browser.switch_to.new_window("tab")
        browser.get(server.base + run.links["Alice"])
        alice = browser.current_window_handle
        panel = asked(browser, "textarea")
        assert panel.startswith("Your turn · seat Alice · Alice · T1 R1 · speak")
        assert [speaker for speaker, _, _ in entries(browser)] == ["Moderator"]  # the conversation so far
        assert browser.title.startswith("● Your turn")
        assert browser.switch_to.active_element.tag_name == "textarea"  # focused to type
        text = css(browser, "#seat-panel textarea")[0]
        text.send_keys("I would measure harm.")
        text.send_keys(Keys.ENTER)  # a new line, not a send
        text.send_keys("And <b>cost</b>.")
        css(browser, ".seat-send button")[0].click()
        wait_for(lambda: state(browser) in ("sending", "waiting"), 30)

        browser.switch_to.window(judge)
        panel = asked(browser)
        assert "Your verdict: have the participants reached agreement?" in panel
        assert [b.get_attribute("value") for b in css(browser, ".seat-choices button")] == ["AGREEMENT", "MORE_DEBATE"]
        said = wait_for(lambda: [e for e in entries(browser) if e[0] == "Alice"])
        assert said[0][1] == "human" and "I would measure harm.\nAnd <b>cost</b>." in said[0][2]
        choose(browser, "MORE_DEBATE")
        assert "Why more debate? The moderator is told" in asked(browser, "textarea[data-one-line]")
        css(browser, "#seat-panel textarea")[0].send_keys("Costs <b>were</b> left out.", Keys.ENTER)  # one line

        browser.switch_to.window(alice)
        panel = asked(browser, "textarea")
        assert "T1 R2" in panel
        css(browser, ".seat-send button")[0].click()  # an empty turn
        assert "Send an empty turn?" in asked(browser, "button[value=no]")
        choose(browser, "no")
        assert "That does not read: write the turn" in asked(browser, "textarea")
        css(browser, "#seat-panel textarea")[0].send_keys("Still harm.", Keys.CONTROL, Keys.ENTER)

        browser.switch_to.window(judge)
        wait_for(lambda: any("Still harm." in text for _, _, text in entries(browser)), 30)
        choose(browser, "AGREEMENT")
        ends_finished(run, browser)
        assert browser.execute_script("return window.__pwned") is None and css(browser, "#unit-body img") == []
        browser.switch_to.window(alice)
        wait_for(lambda: state(browser) == "finished", 10)
    t = load(out / "conference.jsonl")
    human = {(h.seat, tuple(h.answers)) for h in t.of_type(Human)}
    assert human == {("Alice", ("I would measure harm.\nAnd <b>cost</b>.",)), ("judge", ("MORE_DEBATE", "Costs <b>were</b> left out.")),
                     ("Alice", ("", "no", "Still harm.")), ("judge", ("AGREEMENT",))}
    assert [(v.round, v.verdict) for v in t.of_type(Verdict)] == [(1, "MORE_DEBATE"), (2, "AGREEMENT")]
    assert [m.source for m in t.messages if m.speaker in ("Alice", "Judge")] == ["human"] * 4
    assert [m.content for m in t.messages if m.speaker == "Alice"] == ["I would measure harm.\nAnd <b>cost</b>.",
                                                                      "Still harm."]
    assert sorted(p.name for p in (out / "seats").iterdir()) == ["Alice.token", "judge.token"]  # nothing pending


def test_a_seat_link_answers_only_its_seat_from_its_own_page_and_opens_nothing_else(folder, browser):
    out = folder / "runs" / "conf"
    anywhere = ("--host", "0.0.0.0")
    with seated(folder, folder / "conference.yaml", out, "Alice", "judge", viewer=anywhere) as (run, server):
        base = re.sub(r"//0\.0\.0\.0:", "//127.0.0.1:", server.base)
        alice, judge = base + run.links["Alice"], base + run.links["judge"]
        wait_for(lambda: (out / "seats" / "Alice.json").exists(), 60)
        assert get(alice)[0] == 200 and get(judge)[0] == 200  # a seat's link needs no viewer token
        assert get(base + "/")[0] == 401 and get(base + "/run/conf")[0] == 401  # but opens nothing else
        asked_id = pending_id(out, "Alice")
        assert post(judge, {"asked": asked_id, "text": "hijacked"}, base) == 409  # another seat's question
        assert post(alice, {"asked": asked_id, "text": "x"}, None) == 403  # not from its page
        assert post(alice, {"asked": asked_id, "text": "x"}, "http://evil.example") == 403
        assert post(base + "/seat/" + "A" * 32, {"asked": asked_id, "text": "x"}, base) == 404
        typed = "\x1b[31mred\x1b[0m </p><script>window.__pwned=1</script>\u202eevil"
        assert post(alice, {"asked": asked_id, "text": typed}, base) == 303
        assert post(alice, {"asked": asked_id, "text": "twice"}, base) == 409  # one answer per question
        browser.get(judge)
        asked(browser)
        said = [text for speaker, source, text in entries(browser) if speaker == "Alice" and source == "human"]
        assert said and "red </p><script>window.__pwned=1</script>evil" in said[0]
        assert "\x1b" not in browser.page_source and "\u202e" not in browser.page_source
        assert browser.execute_script("return window.__pwned") is None
        choose(browser, "AGREEMENT")
        run.finish()
    t = load(out / "conference.jsonl")
    assert [m.content for m in t.messages if m.speaker == "Alice"][0] == typed  # stored exactly as typed
    assert "hijacked" not in (out / "conference.jsonl").read_text()


def test_a_browser_seat_whose_time_runs_out_is_taken_by_its_model(folder, browser):
    out = folder / "runs" / "conf"
    with seated(folder, folder / "conference.yaml", out, "judge:2:model") as (run, server):
        browser.get(server.base + run.links["judge"])
        assert "2.0 s for this turn" in asked(browser)
        wait_for(lambda: state(browser) != "asking", 30)  # nobody answers
        ends_finished(run, browser)
        judged = [source for speaker, source, _ in entries(browser) if speaker == "Judge"]
        assert judged and set(judged) == {"model"}
    t = load(out / "conference.jsonl")
    human = t.of_type(Human)
    assert human and all(h.fallback == "model" and h.answers == [] and h.limit_s == 2.0 for h in human)
    assert all(m.source == "model" for m in t.messages if m.speaker == "Judge")


def test_a_run_killed_while_a_browser_seat_waits_continues_with_the_same_link(folder, browser):
    out = folder / "runs" / "conf"
    server = Viewer(folder / "runs")
    run = SeatedRun(folder / "conference.yaml", out, "judge")
    try:
        link = run.links["judge"]
        browser.get(server.base + link)
        asked(browser)
        first = pending_id(out, "judge")
        said = entries(browser)
        run.kill()
        wait_for(lambda: state(browser) == "stopped", 10)  # live: the run is gone
        assert post(server.base + link, {"asked": first, "text": "AGREEMENT"}, server.base) == 409
        again = SeatedRun(folder / "conference.yaml", out, "judge")
        assert again.links["judge"] == link  # the same link
        wait_for(lambda: state(browser) == "asking" and shown_id(browser) not in ("", first), 60)  # no reload
        assert shown_id(browser) == pending_id(out, "judge")
        assert entries(browser) == said  # nothing said again
        choose(browser, "AGREEMENT")
        again.finish()
        wait_for(lambda: state(browser) == "finished", 10)
        assert errors_of(browser) == []
    finally:
        run.kill()
        server.stop()
    t = load(out / "conference.jsonl")
    assert [m.turn for m in t.messages] == list(range(1, len(t.messages) + 1))
    assert [m.speaker for m in t.of_type(Message)][:4] == ["Moderator", "Alice", "Bob", "Judge"]
    assert len(t.of_type(RunResumed)) == 1 and [h.answers for h in t.of_type(Human)] == [["AGREEMENT"]]
    assert [v.verdict for v in t.of_type(Verdict)] == ["AGREEMENT"] and t.completed


def test_a_person_judges_cola_items_one_after_another_on_one_page(folder, browser):
    from selenium.webdriver.common.keys import Keys

    out = folder / "runs" / "cola"
    data = stance_dataset(folder / "data", "stance", set())
    with seated(folder, "cola", out, "judger", extra=("--model", "scripted", "--dataset", str(data), "--limit", "2")) \
            as (run, server):
        browser.get(server.base + run.links["judger"])
        for item, stance in (("s1", "against"), ("s2", "neutral")):
            wait_for(lambda: state(browser) == "asking"
                     and f"unit {item}" in "".join(texts(browser, "#unit-body .lede")), 60)
            panel = asked(browser)
            assert "The stance of the text" in panel
            shown = texts(browser, "details.seat-shown pre")[0]
            assert {i: text for i, text, _, _ in STANCES}[item] in shown  # the judger's prompt: the item's text
            assert [b.get_attribute("value") for b in css(browser, ".seat-choices button")] == ["favor", "against",
                                                                                                  "neutral"]
            choose(browser, stance)
            text = wait_for(lambda: css(browser, "#seat-panel textarea"), 30)[0]
            text.send_keys(f"Why {item}.", Keys.CONTROL, Keys.ENTER)
        ends_finished(run, browser)
    rows = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert {i: r["prediction"] for i, r in rows.items()} == {"s1": "against", "s2": "neutral"}
    for item in ("s1", "s2"):
        t = load(out / f"{item}.jsonl")
        assert t.outcome.decided_by == "judger (human)" and t.outcome.explanation == f"Why {item}."


def test_a_person_scores_the_conference_1_to_10_as_its_evaluator(folder, browser):
    out = folder / "runs" / "conf"
    with seated(folder, folder / "conference.yaml", out, "evaluator") as (run, server):
        browser.get(server.base + run.links["evaluator"])
        for score in [*range(1, 11), 7]:
            panel = asked(browser, ".seat-scores")
            assert [b.text for b in css(browser, ".seat-scores button")] == [str(n) for n in range(1, 11)]
            asked_before = shown_id(browser)
            choose(browser, str(score))
            wait_for(lambda: shown_id(browser) != asked_before, 30)  # the next question (or sending)
        assert "Overall" in panel
        assert "Why (a sentence or two)" in asked(browser, "textarea")
        css(browser, "#seat-panel textarea")[0].send_keys("Clear, but short.")
        css(browser, ".seat-send button")[0].click()
        ends_finished(run, browser)
    from moot.protocols.conference.events import Score

    (score,) = load(out / "conference.jsonl").of_type(Score)
    assert list(score.scores.values()) == list(range(1, 11)) and score.overall == 7
    assert score.rationale == "Clear, but short."
