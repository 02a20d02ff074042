"""What the viewer's tests share: runs of every protocol made with the scripted model (data the test
writes), `moot view` started as a user starts it, and headless Chromium.

Run as a script (`python viewer_support.py SCENARIO OUT DELAY`), it runs a scenario with a scripted
model that takes DELAY seconds per word, so a test can watch a run being written.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Optional

import pytest


ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")
SCRIPT = "<script>window.__pwned = 1</script>"
IMG = "<img src=x onerror=window.__pwned=2>"
ARABIC = "هل نوافق على الخطة؟"
CJK = "我们应该同意这个计划吗"

CONFERENCE = f"""\
title: "{SCRIPT}Transport plan"
task: "Decide {IMG} the plan"
topics:
  - "{SCRIPT}{IMG} first question"
  - "{ARABIC} {CJK}"
moderator: {{name: Moderator, persona: "A chair {IMG}"}}
participants:
  - {{name: Ann, label: "Dr. Ann", persona: "An engineer."}}
  - {{name: Bob_2, persona: "A planner."}}
judge: {{name: Judge}}
evaluator: {{name: Evaluator}}
models: {{default: scripted}}
limits: {{max_rounds_per_topic: 2}}
"""
COLA = "protocol: cola\nmodels: {default: scripted}\njudger: {output: json}\n"
STANCES = [("s1", "Masks work", "masks", "favor"), ("s2", "Masks are useless", "masks", "against"),
           ("s3", "Masks exist", "masks", "neutral"), ("s4", "Taxes fund roads", "taxes", "favor"),
           ("s5", "Cut taxes now", "taxes", "against"), ("s6", "Taxes are a topic", "taxes", "neutral")]


def cli(*argv: object, expect: int = 0) -> None:
    from moot.cli import main

    code = main([str(a) for a in argv])
    assert code == expect, f"moot {' '.join(map(str, argv))} exited {code}"


def stance_dataset(folder: Path, name: str, wrong: set[str]) -> Path:
    """The stance items with a scripted answer: the gold label, but `wrong` items get another."""
    folder.mkdir(parents=True, exist_ok=True)
    others = {"favor": "against", "against": "neutral", "neutral": "favor"}
    rows = [{"id": i, "text": f"{text} SCRIPTED_LABEL={others[gold] if i in wrong else gold}", "target": target,
             "label": gold} for i, text, target, gold in STANCES]
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    spec = folder / f"{name}.yaml"
    spec.write_text(f"path: {name}.jsonl\nformat: jsonl\ncolumns: {{id: id, text: text, target: target, label: label}}\n"
                    "labels: {favor: favor, against: against, neutral: neutral}\nmetric: macro_f1\n", encoding="utf-8")
    return spec


def make_runs(top: Path) -> dict[str, Path]:
    """A folder of runs: a conference (hostile, right-to-left and CJK text), a batch of two, two COLA
    runs on the same items (they differ on some), S2MAD, negotiation and debate."""
    runs = top / "runs"
    data = top / "data"
    data.mkdir(parents=True)
    (data / "conference.yaml").write_text(CONFERENCE, encoding="utf-8")
    (data / "cola.yaml").write_text(COLA, encoding="utf-8")
    made = {"conference": runs / "conference", "batch": runs / "batch", "cola-a": runs / "cola-a",
            "cola-b": runs / "cola-b", "s2mad": runs / "s2mad", "negotiation": runs / "negotiation",
            "debate": runs / "debate"}
    cli(data / "conference.yaml", "--out", made["conference"], "--quiet", "--model", "judge=scripted:MORE_DEBATE,AGREEMENT,GARBAGE")
    cli(data / "conference.yaml", "--vary", "seed=1,2", "--out", made["batch"], "--quiet")
    cli(data / "cola.yaml", "--dataset", stance_dataset(data, "stance-a", {"s2"}), "--out", made["cola-a"], "--quiet")
    cli(data / "cola.yaml", "--dataset", stance_dataset(data, "stance-b", {"s2", "s3", "s5"}), "--out",
        made["cola-b"], "--quiet")
    cli("s2mad", "--dataset", ROOT / "datasets" / "demo-rumour-veracity.yaml", "--limit", 3, "--model", "scripted",
        "--out", made["s2mad"], "--quiet")
    cli("negotiation", "--dataset", ROOT / "datasets" / "demo-sentiment.yaml", "--limit", 3, "--model", "scripted",
        "--out", made["negotiation"], "--quiet")
    cli("debate", "--dataset", stance_dataset(data, "stance-d", set()), "--model", "scripted", "--out",
        made["debate"], "--quiet")
    return made


class Viewer:
    """`moot view DIR` as a user starts it (a process), its URL read from what it prints."""

    def __init__(self, folder: Path, *extra: str):
        self.process = subprocess.Popen([sys.executable, "-m", "moot", "view", str(folder), *extra],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = re.search(r"(http://\S+)", line)
        assert found, f"moot view printed {line!r}; stderr: {self.process.stderr.read() if self.process.stderr else ''}"
        self.url = found.group(1)
        self.base = re.sub(r"/(\?.*)?$", "", self.url)

    def stop(self) -> tuple[int, float]:
        """Ctrl-C: (exit code, seconds it took to stop)."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGINT)
        code = self.process.wait(timeout=10)
        return code, time.monotonic() - started


def chromium(profile: Path, width: int = 1280, height: int = 900):  # -> selenium WebDriver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    driver_path = shutil.which("chromedriver")
    assert driver_path, "Chromium is installed but chromedriver is not: apt-get install -y chromium-driver"
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never download anything
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS + (f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    driver.set_page_load_timeout(60)
    return driver


def wait_for(condition, timeout: float = 10.0, every: float = 0.05):
    """Poll `condition()` until it is truthy (its value), or fail after `timeout` seconds."""
    end = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {getattr(condition, '__name__', condition)}")
        time.sleep(every)


# ------------------------------------------------------------------------------------ a slow run
def slow_clients(delay: float) -> dict[str, object]:
    from moot.models.backends.scripted.client import ScriptedChatCompletionClient

    class Slow(ScriptedChatCompletionClient):
        async def create_stream(self, messages, **kwargs):
            async for item in super().create_stream(messages, **kwargs):
                if isinstance(item, str):
                    await asyncio.sleep(delay)
                yield item

        async def create(self, messages, **kwargs):
            await asyncio.sleep(delay)
            return await super().create(messages, **kwargs)

    return {"scripted": Slow(record=False)}


def slow_run(scenario: Path, out: Path, delay: float, extra: Optional[list[str]] = None) -> int:
    from moot.cli.run import run as run_command

    return run_command([str(scenario), "--out", str(out), "--quiet", *(extra or [])], slow_clients(delay))


def start_slow_run(scenario: Path, out: Path, delay: float) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(Path(__file__)), str(scenario), str(out), str(delay)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)


def lines_of(path: Path) -> Iterator[dict[str, object]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


if __name__ == "__main__":
    sys.exit(slow_run(Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])))


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium per test module (import it into the module to use it)."""
    driver = chromium(tmp_path_factory.mktemp("profile"))
    yield driver
    driver.quit()


def css(browser, selector):
    from selenium.webdriver.common.by import By

    return browser.find_elements(By.CSS_SELECTOR, selector)


def texts(browser, selector) -> list[str]:
    """The text of every element `selector` finds, read in one step: a live page may replace an
    element between finding it and reading it."""
    return browser.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), e => e.innerText)", selector)
