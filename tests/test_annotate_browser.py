"""Blind rating in the browser: `moot annotate RUN --browser` started as a user starts it, and
headless Chromium driven by Selenium on the link it prints.

A scripted conference rated blind (the model's answers absent from the page while a thing is
asked, shown beside the rater's once answered), an empty answer to a closed choice asked again,
the annotations file beside the run (the transcript untouched), a second session going on where
the first stopped, a third with nothing left, and `moot report`'s agreement figures from these
ratings equal to those from the same ratings typed at the terminal. Then the safety cases: the
token on every request, the loopback Host, answers only from the page itself and only to the
question asked now, and what a model or the rater wrote shown inert. Needs Debian's chromium and
chromium-driver.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from run_support import annotate_at_terminal, run_scenario, scored_conference
from viewer_support import CHROMIUM, IMG, ROOT, SCRIPT, browser, css, wait_for

from moot.cli import main
from moot.contract.rating import Rateable
from moot.log.annotations import FILE, read_ratings
from moot.log.transcript import load
from moot.protocols.conference.rating import rateables

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (apt-get install -y chromium chromium-driver)")


class Annotating:
    """`moot annotate RUN --browser ...` as a user starts it; `link`: the link it printed (None:
    it had nothing to serve)."""

    def __init__(self, run: Path, *extra: str):
        self.process = subprocess.Popen([sys.executable, "-m", "moot", "annotate", str(run), "--browser", *extra],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.process.stdout is not None
        self.first = self.process.stdout.readline()
        found = re.search(r"blind at (http://\S+)", self.first)
        self.link = found.group(1) if found else None
        self.base = re.sub(r"/\?token=.*$", "", self.link or "")

    def finish(self, timeout: float = 60) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, self.first + out, err

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate(timeout=30)


def panel(browser) -> tuple[str, str, str]:
    """(state, the question's id, the panel's heading) as the page shows them now, read at once."""
    return tuple(browser.execute_script(
        "var p = document.querySelector('section.seat-panel'),"
        " i = document.querySelector('#seat-panel input[name=asked]'),"
        " h = document.querySelector('#seat-title');"
        "return [p ? p.getAttribute('data-state') : '', i ? i.value : '', h ? h.innerText : ''];"))


def asked_about(browser, thing: str, timeout: float = 30) -> str:
    """Wait until the page asks about `thing`; the question's id."""
    state, asked, _ = wait_for(lambda: (lambda p: p if p[0] == "asking" and re.search(
        f"· {thing} · as ann( · question 1 of 10)?$", p[2]) else None)(panel(browser)), timeout)
    return asked


def answer(browser, value: str) -> None:
    """Press the button `value` of the question asked now, and wait until the page moves on."""
    before = panel(browser)[1]
    button = wait_for(lambda: [b for b in css(browser, ".seat-choices button") if b.get_attribute("value") == value])
    button[0].click()
    wait_for(lambda: panel(browser)[1] != before, 30)


def revealed(browser, thing: str) -> dict[str, tuple[str, str]]:
    """The reveal of `thing` on the page now: question key -> (yours, the model's); {} when none."""
    return {key: (yours, model) for key, yours, model in browser.execute_script(
        "var r = document.querySelector('.rating-reveal[data-item=\"' + arguments[0] + '\"]');"
        "return r ? Array.from(r.querySelectorAll('tbody tr')).map(function (row) {"
        " return [row.getAttribute('data-key'), row.cells[1].innerText, row.cells[2].innerText]; }) : [];", thing)}


def given(thing: Rateable, number: int) -> list[str]:
    """What the rater answers to a thing: a verdict alternating with the thing's number, scores
    near the model's (so the agreement figures are neither perfect nor empty)."""
    if thing.kind == "verdict":
        return [("AGREEMENT", "MORE_DEBATE")[number % 2]]
    return [str(min(10, max(1, int(thing.model[q.key] or 5) + (n % 3) - 1))) for n, q in enumerate(thing.questions)]


def rate_in_browser(browser, thing: Rateable, answers: list[str]) -> None:
    asked_about(browser, thing.id)
    assert revealed(browser, thing.id) == {}  # blind: none of the model's answers to it on the page
    material = css(browser, "#rating-shown pre.rating-shown")[0].text
    assert material and "Judge:" not in material and "Evaluator:" not in material
    for number, value in enumerate(answers, 1):
        if len(answers) > 1:
            assert panel(browser)[2].endswith(f"· question {number} of {len(answers)}")
        answer(browser, value)
    shown = wait_for(lambda: revealed(browser, thing.id), 30)
    assert shown == {q.key: (a, thing.model[q.key] or "unparsed") for q, a in zip(thing.questions, answers)}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_conference_is_rated_blind_in_the_browser_resumed_and_agrees_with_the_terminal(
        make_scenario, tmp_path, browser, monkeypatch, capsys):
    out = scored_conference(make_scenario, tmp_path, topics=2)
    things = rateables(load(out / "conference.jsonl"))
    assert [t.kind for t in things].count("scores") == 2 and [t.kind for t in things].count("verdict") >= 3
    answers = [given(t, n) for n, t in enumerate(things)]
    transcript = sha(out / "conference.jsonl")

    first = Annotating(out, "--limit", "3")  # no --rater: the page asks the name
    try:
        assert first.link, first.first
        browser.get(first.link)
        wait_for(lambda: css(browser, "#seat-panel textarea[data-one-line]"))
        assert "Rate blind · before you start" in panel(browser)[2]
        name = css(browser, "#seat-panel textarea")[0]
        name.send_keys("ann\n")  # Enter sends a one-line answer
        asked = asked_about(browser, things[0].id)
        assert browser.title.startswith("● Your turn")
        browser.execute_script(  # an empty answer to a closed choice (no button sends one)
            "var f = document.querySelector('form.seat-form'), i = document.createElement('input');"
            "i.type = 'hidden'; i.name = 'text'; i.value = ''; f.appendChild(i); f.submit();")
        wait_for(lambda: panel(browser)[1] not in ("", asked))
        problem = css(browser, "#seat-panel .problem")[0].text
        assert "That does not read: choose one of AGREEMENT, MORE_DEBATE" in problem
        for thing, given_answers in zip(things[:3], answers[:3]):
            rate_in_browser(browser, thing, given_answers)
        wait_for(lambda: panel(browser)[0] == "done", 30)
        assert "All rated · ann" in panel(browser)[2]
        assert "3 rated now, 0 before" in css(browser, "#seat-panel")[0].text
        code, printed, err = first.finish()
        assert code == 0, err
        assert f"3 thing(s) to rate in {out} as ann (0 rated before)" in printed and "all rated" in printed
        errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
    finally:
        first.kill()
    ratings = read_ratings(out)
    assert {r.rater for r in ratings} == {"ann"} and all(r.ts for r in ratings)
    assert [(r.item, r.key, r.value) for r in ratings] == [
        (t.id, q.key, a) for t, given_answers in zip(things[:3], answers[:3])
        for q, a in zip(t.questions, given_answers)]
    assert sha(out / "conference.jsonl") == transcript  # never inside the transcript
    assert sorted(p.name for p in out.iterdir() if p.name not in ("cache.sqlite", "run.lock")) == [
        FILE, "conference.jsonl", "results.jsonl", "run.json"]  # the one file it writes

    second = Annotating(out, "--rater", "ann")
    try:
        assert second.link, second.first
        browser.get(second.link)
        asked_about(browser, things[3].id)
        assert panel(browser)[2].startswith(f"Rate blind · 1/{len(things) - 3} · unit conference")  # rated: skipped
        for thing, given_answers in zip(things[3:], answers[3:]):
            rate_in_browser(browser, thing, given_answers)
        wait_for(lambda: panel(browser)[0] == "done", 30)
        code, printed, err = second.finish()
        assert code == 0, err
        assert f"{len(things) - 3} thing(s) to rate in {out} as ann (3 rated before)" in printed
    finally:
        second.kill()
    third = Annotating(out, "--rater", "ann")
    code, printed, _ = third.finish()
    assert code == 0 and third.link is None  # nothing left: nothing served
    assert f"0 thing(s) to rate in {out} as ann ({len(things)} rated before)" in printed

    at_terminal = tmp_path / "terminal" / "run"  # the same run, the same ratings typed at the terminal
    shutil.copytree(out, at_terminal, ignore=shutil.ignore_patterns(FILE, "run.lock"))
    annotate_at_terminal(at_terminal, "ann", [a for given_answers in answers for a in given_answers], monkeypatch,
                         capsys)

    def kept(run: Path) -> list[tuple[str, ...]]:
        return [(r.rater, r.unit, r.item, r.kind, r.key, r.value) for r in read_ratings(run)]

    assert kept(at_terminal) == kept(out) and len(kept(out)) == sum(map(len, answers))
    for run in (out, at_terminal):
        assert main(["report", str(run), "--out", str(run.parent / "rep")]) == 0
    browser_figures = (out.parent / "rep" / "agreement.csv").read_text(encoding="utf-8")
    assert browser_figures == (at_terminal.parent / "rep" / "agreement.csv").read_text(encoding="utf-8")
    assert "verdict,kappa,ann~model" in browser_figures and "clarity,rho,ann~model" in browser_figures


HOSTILE = f"""\
title: "{SCRIPT}Rating"
task: Decide the test questions.
topics:
  - "{SCRIPT}{IMG} first question"
moderator: {{name: Moderator}}
participants:
  - {{name: Alice, persona: Alice the tester.}}
  - {{name: Bob, persona: Bob the tester.}}
judge: {{name: Judge}}
evaluator: {{name: Evaluator}}
models: {{default: scripted}}
limits: {{max_rounds_per_topic: 1}}
"""


def request(url: str, fields: dict[str, str] | None = None, headers: dict[str, str] | None = None
            ) -> tuple[int, dict[str, str], str]:
    """A GET (or a POST of `fields`), redirects not followed: (status, headers, body)."""
    data = urllib.parse.urlencode(fields).encode() if fields is not None else None
    sent = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data is not None else "GET")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(sent, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode("utf-8")


def test_the_rating_page_needs_its_token_takes_answers_only_from_itself_and_shows_everything_inert(tmp_path, browser):
    (tmp_path / "hostile.yaml").write_text(HOSTILE, encoding="utf-8")
    out = tmp_path / "run"
    assert run_scenario(tmp_path / "hostile.yaml", out) == 0
    session = Annotating(out)
    try:
        assert session.link and session.link.startswith("http://127.0.0.1:"), session.first
        base, token = session.base, session.link.split("?token=")[1]
        with_token = f"{base}/?token={token}"
        status, headers, page = request(with_token)
        assert status == 200 and "script-src 'self'" in headers["Content-Security-Policy"]
        assert headers["X-Frame-Options"] == "DENY" and "<script>" not in page.replace(
            '<script src="/static/viewer.js"></script>', "")
        assert request(base + "/")[0] == 401 and request(f"{base}/?token={'x' * len(token)}")[0] == 401
        assert request(f"{base}/static/viewer.js")[0] == 401  # the static files too
        assert request(f"{base}/static/viewer.js?token={token}")[0] == 200
        assert request(f"{base}/static/..%2Frun.json?token={token}")[0] == 404  # no file of the run is served
        assert request(with_token, headers={"Host": "evil.example"})[0] == 421  # DNS rebinding
        asked = re.search(r'name="asked" value="([0-9a-f]+)"', page).group(1)
        typed = "\x1b[31mann\x1b[0m </h2><script>window.__pwned=1</script>\u202eevil"
        assert request(with_token, {"asked": asked, "text": typed})[0] == 403  # not from its page
        assert request(with_token, {"asked": asked, "text": typed}, {"Origin": "http://evil.example"})[0] == 403
        assert request(with_token, {"asked": "0" * 16, "text": typed}, {"Origin": base})[0] == 409  # not asked
        assert request(with_token, {"asked": asked}, {"Origin": base})[0] == 400
        assert request(with_token, {"asked": asked, "text": typed}, {"Origin": base})[0] == 303
        assert request(with_token, {"asked": asked, "text": "twice"}, {"Origin": base})[0] == 409  # one answer

        browser.get(session.link)
        wait_for(lambda: panel(browser)[0] == "asking" and "T1 R1 verdict" in panel(browser)[2], 30)
        heading = panel(browser)[2]
        assert "[31m" not in heading and "ann </h2><script>window.__pwned=1</script>evil" in heading
        material = css(browser, "#rating-shown pre.rating-shown")[0].text
        assert f"{SCRIPT}{IMG} first question" in material  # a model's text, shown as text
        source = browser.page_source
        assert "\x1b" not in source and "\u202e" not in source
        assert css(browser, "#rating-shown img") == [] and css(browser, "#seat-panel script") == []
        assert browser.execute_script("return window.__pwned") is None
        answer(browser, "AGREEMENT")
        assert wait_for(lambda: revealed(browser, "T1 R1 verdict"), 30)["verdict"][0] == "AGREEMENT"
        assert css(browser, "#seat-panel img") == [] and browser.execute_script("return window.__pwned") is None
    finally:
        session.kill()
    kept = [(r.rater, r.item, r.value) for r in read_ratings(out)]
    assert kept == [(typed, "T1 R1 verdict", "AGREEMENT")]  # the name exactly as typed


def test_an_unknown_run_or_a_bad_option_is_one_line(tmp_path, capsys):
    for argv, said in ((["annotate", str(tmp_path / "nowhere"), "--browser"], "no such run folder"),
                       (["annotate", str(tmp_path), "--browser", "--limit", "-1"], "--limit -1: must be 0 or more"),
                       (["annotate", str(tmp_path), "--browser", "--port", "70000"], "--port 70000: must be 0-65535")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err
