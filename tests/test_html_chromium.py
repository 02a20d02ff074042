"""The HTML export in a real browser: headless Chromium driven by Selenium.

Needs Debian's `chromium` and `chromium-driver` (apt-get install -y chromium chromium-driver)
and the `selenium` package (the `test` extra). Skips only when Chromium itself is absent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from moot.cli import main
from moot.log.events import Message
from moot.protocols.conference.events import Score, Verdict
from moot.log.transcript import load

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (apt-get install -y chromium chromium-driver)")

SCRIPT = "<script>window.__pwned = 1</script>"
IMG = "<img src=x onerror=window.__pwned=2>"
SCENARIO = f"""\
title: "{SCRIPT}Transport plan"
task: "Decide {IMG}"
topics:
  - "{SCRIPT}{IMG}"
moderator: {{name: Moderator, persona: "{IMG}"}}
participants: [{{name: Ann}}, {{name: Bob_2}}]
judge: {{name: Judge}}
evaluator: {{name: Evaluator}}
"""
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,1000")
BADGE_COLORS = {"AGREEMENT": "rgba(22, 163, 74, 1)", "MORE_DEBATE": "rgba(217, 119, 6, 1)",
                "UNPARSED": "rgba(107, 114, 128, 1)"}  # green, amber, grey


@pytest.fixture
def page(tmp_path) -> tuple[Path, Path]:
    """(transcript, html export) of a scripted run whose messages carry script/img payloads."""
    (tmp_path / "xss.yaml").write_text(SCENARIO, encoding="utf-8")
    folder, html = tmp_path / "run", tmp_path / "run.html"
    assert main([str(tmp_path / "xss.yaml"), "--model", "scripted", "--model",
                 "judge=scripted:MORE_DEBATE,GARBAGE,AGREEMENT", "--out", str(folder), "--quiet"]) == 0
    assert main(["export", str(folder), "--format", "html", "--out", str(html)]) == 0
    return folder / "conference.jsonl", html


@pytest.fixture
def browser(tmp_path, monkeypatch):
    driver_path = shutil.which("chromedriver")
    assert driver_path, "Chromium is installed but chromedriver is not: apt-get install -y chromium-driver"
    monkeypatch.setenv("SE_OFFLINE", "true")  # Selenium Manager must never download anything
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS + (f"--user-data-dir={tmp_path / 'chromium-profile'}",):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def test_export_renders_safely_in_chromium(page, browser, tmp_path):
    from selenium.webdriver.common.by import By

    transcript, html = page
    run = load(transcript)
    browser.get(html.as_uri())
    by_css = lambda selector: browser.find_elements(By.CSS_SELECTOR, selector)  # noqa: E731

    # No payload ran, and none became an element: it is all text.
    assert browser.execute_script("return window.__pwned") is None
    assert by_css("script") == [] and by_css("img") == []
    assert SCRIPT in browser.title
    shown = [e for e in by_css("article.entry .content") if SCRIPT + IMG in e.text]
    assert shown and all(e.is_displayed() for e in shown)
    assert "<script>" in shown[0].text

    # The timeline: one entry per message, with its speaker's initials in a coloured circle.
    entries = by_css("article.entry")
    assert len(entries) == len(run.of_type(Message))
    assert [e.find_element(By.CSS_SELECTOR, ".avatar").text for e in entries[:3]] == ["Mo", "An", "B2"]
    assert entries[0].find_element(By.CSS_SELECTOR, ".avatar").value_of_css_property("border-radius") == "50%"

    # Verdict badges where they occurred, coloured by verdict.
    badges = by_css("article.entry .badge.verdict")
    assert [b.text for b in badges] == [v.verdict for v in run.of_type(Verdict)] == \
        ["MORE_DEBATE", "UNPARSED", "AGREEMENT"]
    assert {b.text: b.value_of_css_property("background-color") for b in badges} == BADGE_COLORS

    # The evaluator's ten scores as ten visible bars, as long as the scores say.
    (score,) = run.of_type(Score)
    charts = by_css("svg.score-chart")
    assert len(charts) == 1
    bars = charts[0].find_elements(By.CSS_SELECTOR, "rect.bar")
    assert len(bars) == 10
    widths = [browser.execute_script("return arguments[0].getBoundingClientRect().width", b) for b in bars]
    assert all(w > 0 for w in widths)
    assert widths[0] / score.scores["clarity"] == pytest.approx(widths[-1] / score.scores["emotional_intelligence"])

    assert "completed — all topics closed" in browser.find_element(By.ID, "stop").text

    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, min(height + 40, 8000))
    screenshot = tmp_path / "export.png"
    assert browser.save_screenshot(str(screenshot)) and screenshot.stat().st_size > 10_000
    print(f"screenshot: {screenshot}")


def test_item_export_renders_stages_and_outcome_safely_in_chromium(browser, tmp_path):
    """A COLA item whose text carries payloads: its stages in order, every message, the
    judger's decision and the outcome, and nothing of the payload live."""
    from selenium.webdriver.common.by import By

    folder, html = tmp_path / "cola", tmp_path / "cola.html"
    text = f"{SCRIPT}{IMG} Remote school is great SCRIPTED_LABEL=favor"
    assert main(["run", "cola", "--model", "scripted", "--input", f"text={text}", "--input", "target=school",
                 "--out", str(folder), "--quiet"]) == 0
    assert main(["export", str(folder), "--out", str(html)]) == 0
    (transcript,) = [p for p in folder.glob("*.jsonl") if p.name != "results.jsonl"]
    run = load(transcript)
    browser.get(html.as_uri())
    by_css = lambda selector: browser.find_elements(By.CSS_SELECTOR, selector)  # noqa: E731

    assert browser.execute_script("return window.__pwned") is None
    assert by_css("script") == [] and by_css("img") == []
    quotes = [e.text for e in by_css("blockquote.quote")]
    assert any(SCRIPT + IMG in q for q in quotes)  # the item's text, shown as text

    headings = [e.text for e in by_css("h2")]
    stages = [h for h in headings if h in ("Input", "Analysis", "Debate", "Conclusion", "Outcome")]
    assert stages == ["Input", "Analysis", "Debate", "Conclusion", "Outcome"]
    entries = by_css("article.entry")
    assert len(entries) == len(run.messages) == 7
    assert [e.get_attribute("data-stage") for e in entries] == ["analysis"] * 3 + ["debate"] * 3 + ["conclusion"]
    judger = entries[-1]
    assert judger.get_attribute("data-speaker") == "judger" and judger.get_attribute("data-decision") == "favor"
    assert "decision favor" in judger.find_element(By.CSS_SELECTOR, ".meta").text
    outcome = by_css(".note.outcome")
    assert len(outcome) == 1 and outcome[0].is_displayed()
    assert outcome[0].text == "stance: favor — decided by judger"
    # no gold label (a typed input): neither right (green) nor wrong (red), the note's own colour
    assert outcome[0].value_of_css_property("background-color") == "rgba(238, 242, 255, 1)"
