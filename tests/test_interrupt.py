"""Ctrl-C stops a run promptly, records it as interrupted, and the transcript resumes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_ctrl_c_stops_records_and_resumes(tmp_path):
    scenario = tmp_path / "long.yaml"
    scenario.write_text(
        "title: long\ntask: t\ntopics: [a, b, c, d, e, f]\nmoderator: {name: Moderator}\n"
        "participants: [{name: P1}, {name: P2}]\njudge: {name: Judge}\n"
        "generation: {max_tokens: 48}\n", encoding="utf-8")
    folder = tmp_path / "run"
    out = folder / "conference.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "run_conference.py"), str(scenario), "--model", "local",
         "--out", str(folder), "--quiet"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not out.exists() or out.read_text().count('"message"') < 2):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert time.monotonic() - sent < 30, "Ctrl-C must not wait for the conference to finish"
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert events[-1]["type"] == "run_finished" and events[-1]["status"] == "interrupted"
    assert "Stop: interrupted" in stdout and f"transcript: {out}" in stdout
    assert stderr.strip().splitlines() == [f"interrupted: run the same command again to continue ({folder})"]
    kept = [e["turn"] for e in events if e["type"] == "message"]
    resumed = subprocess.run(
        [sys.executable, str(ROOT / "run_conference.py"), str(scenario), "--model", "scripted",
         "--out", str(folder), "--allow-model-change", "--quiet"], cwd=tmp_path, capture_output=True, text=True,
        timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    turns = [json.loads(line)["turn"] for line in out.read_text().splitlines() if '"type":"message"' in line]
    assert turns[:len(kept)] == kept and turns == list(range(1, len(turns) + 1))
