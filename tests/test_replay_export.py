"""Replay and export read only the transcript; old and cut-off transcripts still load."""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from moot.cli import main
from moot.commands import export, replay
from moot.render_html import render_html
from moot.render_md import render_markdown
from moot.transcript import MIGRATIONS, SCHEMA_VERSION, Message, Score, TranscriptError, Verdict, load

ROOT = Path(__file__).resolve().parents[1]
PAYLOAD = "<script>alert(1)</script>"
XSS_SCENARIO = f"""\
title: "{PAYLOAD} & <b>plan</b>"
task: "Decide </div><script>alert(2)</script>"
topics:
  - "{PAYLOAD}<img src=x onerror=alert(3)>"
  - second topic
moderator: {{name: Moderator, persona: "<img src=x onerror=alert(4)>"}}
participants: [{{name: Ann}}, {{name: Bob_2}}]
judge: {{name: Judge}}
evaluator: {{name: Evaluator}}
"""


def run_scripted(scenario: Path, out: Path, judge: str = "MORE_DEBATE,AGREEMENT,GARBAGE") -> Path:
    code = main([str(scenario), "--model", "scripted", "--model", f"judge=scripted:{judge}",
                 "--out", str(out), "--quiet"])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """The drug-policy conference with a judge that says MORE_DEBATE, AGREEMENT, then garbage."""
    return run_scripted(ROOT / "scenarios" / "drug_policy.yaml", tmp_path_factory.mktemp("demo") / "run.jsonl")


@pytest.fixture(scope="module")
def xss(tmp_path_factory) -> Path:
    """A run whose scenario strings, and so the scripted messages, carry HTML/script payloads."""
    folder = tmp_path_factory.mktemp("xss")
    (folder / "xss.yaml").write_text(XSS_SCENARIO, encoding="utf-8")
    return run_scripted(folder / "xss.yaml", folder / "run.jsonl")


def with_latency(source: Path, target: Path, seconds: float) -> Path:
    lines = [json.loads(line) for line in source.read_text().splitlines()]
    for event in lines:
        if event["type"] == "message":
            event["latency_s"] = seconds
    target.write_text("".join(json.dumps(e) + "\n" for e in lines))
    return target


def replay_output(*argv: str) -> str:
    out = io.StringIO()
    assert replay.run(list(argv), stream=out) == 0
    return out.getvalue()


# ---------------------------------------------------------------- replay

def test_replay_shows_topics_rounds_verdicts_scores_and_summary(demo):
    text = replay_output(str(demo), "--no-delay", "--no-color")
    assert "\033[" not in text
    for n in (1, 2, 3):
        assert f"=== Topic {n}/3:" in text
    assert "--- round 2 ---" in text and "=== Closing ===" in text
    assert "verdict: MORE_DEBATE" in text and "verdict: AGREEMENT" in text and "verdict: UNPARSED" in text
    assert text.count("Evaluator scores: overall=7") == 2 * 3  # live line + summary line per topic
    assert "== Summary:" in text and "Stop: completed — all topics closed" in text
    messages = len(load(demo).of_type(Message))
    assert len(re.findall(r"^\[(T\d R\d|closing)\] ", text, re.M)) == messages


def test_replay_waits_recorded_latency_over_speed(demo, tmp_path, monkeypatch):
    slow = with_latency(demo, tmp_path / "slow.jsonl", 2.0)
    waits: list[float] = []
    monkeypatch.setattr(replay.time, "sleep", waits.append)
    replay_output(str(slow), "--speed", "4")
    assert waits == [0.5] * len(load(slow).of_type(Message))
    waits.clear()
    replay_output(str(slow), "--no-delay")
    assert waits == []


def test_replay_topic_and_from_turn(demo):
    text = replay_output(str(demo), "--no-delay", "--topic", "2")
    assert "=== Topic 2/3" in text and "=== Topic 1/3" not in text and "[T1 " not in text
    assert "[closing]" not in text
    turns = [m.turn for m in load(demo).of_type(Message) if m.topic == 1]
    text = replay_output(str(demo), "--no-delay", "--from-turn", str(turns[1]))
    first = re.search(r"^\[(T\d) R(\d)\] (\w+)", text, re.M)
    assert first.group(1) == "T2" and first.group(3) == "Participant_1"


def test_replay_colours_speakers_on_request(demo):
    out = io.StringIO()
    out.isatty = lambda: True
    replay.run([str(demo), "--no-delay"], stream=out)
    assert "\033[1;36mModerator" in out.getvalue()  # first speaker in scenario order: first colour


def test_replay_rejects_bad_options(demo, capsys):
    assert main(["replay", str(demo), "--topic", "9"]) == 2
    assert "topics 1..3" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["replay", str(demo), "--speed", "0"])
    with pytest.raises(SystemExit):
        main(["replay", str(demo), "--speed", "2", "--no-delay"])


# ---------------------------------------------------------------- transcripts: cut off, old versions

def test_cut_off_transcript_loads_to_last_complete_event_and_replays(demo, tmp_path):
    data = demo.read_bytes()
    complete = data.count(b"\n") - 3
    cut = data[: [i for i, b in enumerate(data) if b == 10][complete - 1] + 1]
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(cut + data[len(cut): len(cut) + 25])  # half of the next line
    loaded = load(torn)
    assert loaded.torn_tail and len(loaded.events) == complete
    assert loaded.events == load(demo).events[:complete]
    text = replay_output(str(torn), "--no-delay")
    assert "did not finish" in text and "cut off mid-write" in text
    assert "did not finish" in render_html(loaded)


def to_v0(event: dict) -> dict:
    """The made-up pre-release format v0: messages keep `text` instead of `content`, no `calls`."""
    if event["type"] == "run_started":
        return {k: v for k, v in event.items() if k != "schema_version"}
    if event["type"] == "message":
        event = {k: v for k, v in event.items() if k not in ("content", "calls")} | {"text": event["content"]}
    return event


def test_version_0_transcript_is_migrated_on_load(demo, tmp_path):
    assert set(MIGRATIONS) == set(range(SCHEMA_VERSION))  # every older version has a step
    old = tmp_path / "v0.jsonl"
    old.write_text("".join(json.dumps(to_v0(json.loads(line))) + "\n" for line in demo.read_text().splitlines()))
    assert '"text"' in old.read_text() and '"content"' not in old.read_text()
    loaded, current = load(old), load(demo)
    assert loaded.migrated_from == 0 and current.migrated_from is None
    assert loaded.events == current.events
    assert "upgraded on load" in replay_output(str(old), "--no-delay")
    assert main([str(ROOT / "scenarios" / "drug_policy.yaml"), "--resume", str(old)]) == 2


def test_newer_transcript_is_refused(demo, tmp_path):
    lines = demo.read_text().splitlines()
    first = json.loads(lines[0]) | {"schema_version": SCHEMA_VERSION + 1}
    newer = tmp_path / "newer.jsonl"
    newer.write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n")
    with pytest.raises(TranscriptError, match="newer than this moot reads"):
        load(newer)


# ---------------------------------------------------------------- export

class Elements(HTMLParser):
    """Counts elements by tag and by class, and collects the text of `.content` elements."""

    def __init__(self):
        super().__init__()
        self.tags, self.classes, self.contents, self._in_content = Counter(), Counter(), [], 0

    def handle_starttag(self, tag, attrs):
        self.tags[tag] += 1
        classes = (dict(attrs).get("class") or "").split()
        self.classes.update(f"{tag}.{c}" for c in classes)
        if "content" in classes:
            self._in_content, self.contents = 1, self.contents + [""]

    def handle_endtag(self, tag):
        self._in_content = 0 if tag == "div" else self._in_content

    def handle_data(self, data):
        if self._in_content:
            self.contents[-1] += data


def test_html_export_is_self_contained_and_complete(demo, tmp_path):
    out = tmp_path / "run.html"
    assert main(["export", str(demo), "--format", "html", "--out", str(out)]) == 0
    page = out.read_text()
    t = load(demo)
    parsed = Elements()
    parsed.feed(page)
    assert parsed.tags["script"] == parsed.tags["link"] == parsed.tags["img"] == parsed.tags["iframe"] == 0
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//|@import|url\(", page)
    assert "Content-Security-Policy" in page
    assert parsed.classes["article.entry"] == len(t.of_type(Message))
    assert parsed.classes["span.verdict"] == len(t.of_type(Verdict)) == 5
    for verdict in ("AGREEMENT", "MORE_DEBATE", "UNPARSED"):
        assert parsed.classes[f"span.v-{verdict}"] >= 1
    assert parsed.classes["rect.bar"] == 10 * len(t.of_type(Score))
    assert parsed.classes["div.avatar"] == len(t.of_type(Message))
    for text in (t.started.scenario_sha256, "scenarios/drug_policy.yaml", "scripted:MORE_DEBATE,AGREEMENT,GARBAGE",
                 "Tokens and latency per role", "completed — all topics closed", "repeat_penalty"):
        assert text in page


def test_everything_recorded_is_escaped(xss, tmp_path):
    t = load(xss)
    assert any(PAYLOAD in m.content for m in t.of_type(Message))
    page = render_html(t)
    parsed = Elements()
    parsed.feed(page)
    assert parsed.tags["script"] == 0 and parsed.tags["img"] == 0 and parsed.tags["b"] == 0
    assert "<script" not in page and "<img" not in page and "&lt;img src=x onerror=alert(3)&gt;" in page
    assert any(PAYLOAD in text for text in parsed.contents)  # shown as text
    markdown = render_markdown(t)
    assert "<script>" not in markdown and "<img" not in markdown and "&lt;script&gt;" in markdown


def test_markdown_export(demo, tmp_path):
    out = tmp_path / "notes.md"
    assert main(["export", str(demo), "--out", str(out)]) == 0  # format from the suffix
    text = out.read_text()
    assert text.startswith("# Find a new approach")
    assert text.count("## Topic ") == 3 and "## Closing" in text and "### Round 2" in text
    assert "**Verdict: `UNPARSED`**" in text and "| emotional_intelligence | `███████   ` 7 |" in text
    assert "| total | 24 |" in text and "| Judge | judge | scripted:MORE_DEBATE,AGREEMENT,GARBAGE |" in text


def test_export_defaults_beside_transcript_and_to_stdout(demo, tmp_path, capsys):
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(demo.read_bytes())
    assert main(["export", str(copy)]) == 0
    assert (tmp_path / "copy.html").read_text().startswith("<!DOCTYPE html>")
    capsys.readouterr()
    assert export.run([str(copy), "--format", "md", "--out", "-"]) == 0
    assert capsys.readouterr().out.startswith("# Find a new approach")
    assert main(["export", str(tmp_path / "missing.jsonl")]) == 2
