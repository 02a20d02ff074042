"""Replay and export read only the run (folder or transcript); every protocol's runs show their
stages; old and cut-off transcripts still load; nothing recorded becomes live markup."""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from moot.api import replaying
from moot.contract.registry import view_of
from moot.engine.unparsed import EXIT_UNPARSED
from moot.cli import export, main, replay
from moot.log.events import SCHEMA_VERSION, Message, TranscriptError
from moot.protocols.conference.events import Coverage, Score, Verdict
from moot.log.migrations import STEPS
from moot.views.html import render_html
from moot.views.markdown import inline, render_markdown
from moot.log.transcript import load

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
# Markdown that would be live if pasted as is: links, images, raw HTML, autolinks, emphasis.
MARKDOWN_PAYLOAD = ("[click](https://evil.example/) [js](javascript:alert(1)) ![img](https://evil.example/i.png) "
                    "<script>alert(1)</script> <https://evil.example/auto> www.evil.example http://evil.example/x "
                    "**bold** `code` <b>b</b> &lt;script&gt; [ref]: https://evil.example/\n# heading\n- list")


def run_folder(argv: list[str], out: Path) -> Path:
    """Run it; a run whose every answer is unparsed (exit 4: the scripted model names no label) is
    a run to show too."""
    code = main(["run", *argv, "--out", str(out), "--quiet"])
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    unparsed = rows and all(r.get("prediction") == "unparsed" for r in rows)
    assert code == (EXIT_UNPARSED if unparsed else 0)
    return out


def conference(scenario: Path, out: Path, judge: str = "MORE_DEBATE,AGREEMENT,GARBAGE") -> Path:
    return run_folder([str(scenario), "--model", "scripted", "--model", f"judge=scripted:{judge}"], out)


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """The drug-policy conference's run folder; its judge says MORE_DEBATE, AGREEMENT, then garbage."""
    return conference(ROOT / "scenarios" / "drug_policy.yaml", tmp_path_factory.mktemp("demo") / "run")


@pytest.fixture(scope="module")
def demo_t(demo) -> Path:
    return demo / "conference.jsonl"


@pytest.fixture(scope="module")
def xss(tmp_path_factory) -> Path:
    """A run whose scenario strings, and so the scripted messages, carry HTML/script payloads."""
    folder = tmp_path_factory.mktemp("xss")
    (folder / "xss.yaml").write_text(XSS_SCENARIO, encoding="utf-8")
    return conference(folder / "xss.yaml", folder / "run") / "conference.jsonl"


@pytest.fixture(scope="module")
def items(tmp_path_factory) -> dict[str, Path]:
    """One scripted item of each per-item protocol (its bundled example input)."""
    base = tmp_path_factory.mktemp("items")
    # COLA's option judger answers the label the scripted model is given in the text
    # S2MAD's debaters are shown comments marked for the other label: they never agree, and the judge decides
    given = {"cola": ["--input", "text=Face to face can be an absolute joy. SCRIPTED_LABEL=favor"],
             "s2mad": ["--input", "claim=Claim B SCRIPTED_LABEL=real",
                       "--input", "comment=backs it SCRIPTED_SCORE=0.9 SCRIPTED_LABEL=fake",
                       "--input", "comment=doubts it SCRIPTED_SCORE=-0.4"]}
    return {name: run_folder([name, "--model", "scripted", *given.get(name, [])], base / name)
            for name in ("cola", "s2mad", "negotiation")}


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


def the_transcript(folder: Path) -> Path:
    (path,) = [p for p in folder.glob("*.jsonl") if p.name != "results.jsonl"]
    return path


# ---------------------------------------------------------------- replay: conferences

def test_replay_shows_topics_rounds_verdicts_scores_and_summary(demo, demo_t):
    text = replay_output(str(demo), "--no-delay", "--no-color")
    assert "\033[" not in text
    for n in (1, 2, 3):
        assert f"=== Topic {n}/3:" in text
    assert "--- round 2 ---" in text and "=== Closing ===" in text
    assert "verdict: MORE_DEBATE" in text and "verdict: AGREEMENT" in text and "verdict: UNPARSED" in text
    assert text.count("Evaluator scores: overall=7") == 2 * 3  # live line + summary line per topic
    assert text.count("⇒ reference coverage of topic 1: 0/7 items (0%); not covered: health, social,") == 1
    assert "  Assessor: 0/7 reference items covered (0%)" in text  # the summary's line
    assert "== Summary:" in text and "Stop: completed — all topics closed" in text
    messages = len(load(demo_t).of_type(Message))
    assert len(re.findall(r"^\[(T\d R\d|closing)\] ", text, re.M)) == messages
    assert replay_output(str(demo_t), "--no-delay", "--no-color") == text  # the folder or its transcript


def test_replay_waits_recorded_latency_over_speed(demo_t, tmp_path, monkeypatch):
    slow = with_latency(demo_t, tmp_path / "slow.jsonl", 2.0)
    waits: list[float] = []
    monkeypatch.setattr(replaying.time, "sleep", waits.append)
    replay_output(str(slow), "--speed", "4")
    assert waits == [0.5] * len(load(slow).of_type(Message))
    waits.clear()
    replay_output(str(slow), "--no-delay")
    assert waits == []


def test_replay_topic_and_from_turn(demo_t):
    text = replay_output(str(demo_t), "--no-delay", "--topic", "2")
    assert "=== Topic 2/3" in text and "=== Topic 1/3" not in text and "[T1 " not in text
    assert "[closing]" not in text
    turns = [m.turn for m in load(demo_t).of_type(Message) if m.part == 1]
    text = replay_output(str(demo_t), "--no-delay", "--from-turn", str(turns[1]))
    first = re.search(r"^\[(T\d) R(\d)\] ([^(]+) \(", text, re.M)
    assert first.group(1) == "T2" and first.group(3) == "Dr. Weber"  # Participant_1, as the conversation calls it


def test_replay_colours_speakers_on_request(demo_t):
    out = io.StringIO()
    out.isatty = lambda: True
    replay.run([str(demo_t), "--no-delay"], stream=out)
    assert "\033[1;36mModerator" in out.getvalue()  # first speaker in scenario order: first colour


def test_replay_rejects_bad_options(demo, capsys):
    assert main(["replay", str(demo), "--topic", "9"]) == 2
    assert "topics 1..3" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["replay", str(demo), "--speed", "0"])
    with pytest.raises(SystemExit):
        main(["replay", str(demo), "--speed", "2", "--no-delay"])
    assert main(["replay", str(demo.parent / "missing")]) == 2
    assert "no such run folder" in capsys.readouterr().err


def test_replay_strips_control_sequences_written_by_a_model(demo_t, tmp_path):
    events = [json.loads(line) for line in demo_t.read_text().splitlines()]
    message = next(e for e in events if e["type"] == "message" and e["speaker"] == "Participant_1")
    message["content"] = "hello \x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m \x9b31m world"
    message["speaker"] = "Participant_1"
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text("".join(json.dumps(e) + "\n" for e in events))
    text = replay_output(str(hostile), "--no-delay", "--no-color")
    assert "\x1b" not in text and "\x9b" not in text and "\x07" not in text
    assert "hello red 31m world" in text


# ---------------------------------------------------------------- replay: items and batches

def test_replay_cola_item_shows_stages_speakers_and_decision(items):
    text = replay_output(str(items["cola"]), "--no-delay")
    order = [text.index(f"=== {stage} ===") for stage in ("Analysis", "Debate", "Conclusion")]
    assert order == sorted(order)
    for speaker in ("linguist", "domain", "social", "debater_favor", "debater_against", "debater_neutral"):
        assert re.search(rf"^\[(analysis|debate) R1\] {speaker} \(", text, re.M), speaker
    assert re.search(r"^\[conclusion R1\] judger \([\d.]+s\) → favor:", text, re.M)
    assert "⇒ stance: favor — decided by judger" in text


def test_replay_s2mad_item_shows_rounds_and_judge(items):
    text = replay_output(str(items["s2mad"]), "--no-delay")
    for stage in ("Stance separation", "Subjectivity", "Initial opinion", "Debate", "Judge"):
        assert f"=== {stage} ===" in text
    assert re.search(r"^\[initial_opinion R0\] debater_p ", text, re.M)
    assert re.search(r"^\[debate R2\] debater_n ", text, re.M)
    assert re.search(r"^\[subjectivity R1\] classifier \([\d.]+s\) → (subjective|objective):", text, re.M)
    assert "⇒ veracity:" in text


def test_replay_negotiation_groups_each_negotiation(items):
    text = replay_output(str(items["negotiation"]), "--no-delay")
    first, second = text.index("=== First->second ==="), text.index("=== Second->first ===")
    assert first < second and text.count("=== First->second ===") == 1  # concurrent turns not interleaved
    block = text[first:second]
    assert re.search(r"^\[first->second R2\] second \([\d.]+s\) → yes", block, re.M)
    assert "[second->first" not in block


def test_replay_shows_the_items_input_first_and_escaped(items, tmp_path):
    text = replay_output(str(items["s2mad"]), "--no-delay", "--no-color")
    claim = load(the_transcript(items["s2mad"])).started.inputs["claim"]
    assert text.index("=== Input ===") < text.index(f"claim:\n  {claim}\n") < text.index("=== Stance separation ===")
    assert re.search(r"^comments 2:\n  \S", text, re.M)  # every comment, each under its label
    hostile = "A post \x1b]0;pwned\x07\x1b[31mred\x1b[0m\nsecond line"
    run_folder(["debate", "--model", "scripted", "--input", f"text={hostile}", "--input", "target=masks"],
               tmp_path / "debate")
    text = replay_output(str(tmp_path / "debate"), "--no-delay", "--no-color")
    assert "text:\n  A post red\n  second line\ntarget:\n  masks\n" in text and "\x1b" not in text
    judged = run_folder(["chateval", "--model", "scripted"], tmp_path / "chateval")  # the two answers judged
    inputs = load(the_transcript(judged)).started.inputs
    text = replay_output(str(judged), "--no-delay", "--no-color")
    assert f"Answer A:\n  {inputs['response_a']}\nAnswer B:\n  {inputs['response_b']}\n" in text


def test_a_stages_answer_shows_in_its_stage_and_a_reason_is_said_once(tmp_path):
    """A debate whose labels are asked for after each turn (`choice: structured`): the answers go
    with their round's turns, not in sections of their own ("Answer answer")."""
    (tmp_path / "debate.yaml").write_text("protocol: debate\nchoice: structured\nrounds: 1\nagents: 2\n"
                                          "labels: [favor, against]\nmodels: {default: scripted}\n")
    folder = run_folder([str(tmp_path / "debate.yaml"), "--input", "text=Masks work SCRIPTED_LABEL=favor"],
                        tmp_path / "run")
    text = replay_output(str(folder), "--no-delay", "--no-color")
    assert re.findall(r"^=== (.*) ===$", text, re.M) == ["Input", "Answer", "Debate"]
    assert re.search(r"^\[answer R0\] agent_1 \(answer, [\d.]+s\) → favor:", text, re.M)
    assert re.search(r"^\[debate R1\] agent_2 \(answer, [\d.]+s\) → favor:", text, re.M)
    assert text.rstrip().endswith("Stop: completed") and "completed — completed" not in text
    page = render_markdown([loaded := load(the_transcript(folder))], [view_of(loaded.started)])
    assert "**Stop: completed**" in page and "## Answer answer" not in page


def test_a_run_with_no_end_replays_as_running_while_a_process_holds_its_folder(demo, tmp_path):
    import fcntl
    import os
    import shutil

    folder = shutil.copytree(demo, tmp_path / "run")
    path = folder / "conference.jsonl"
    path.write_text("".join(line + "\n" for line in path.read_text().splitlines() if '"run_finished"' not in line))
    lock = os.open(folder / "run.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        live = replay_output(str(folder), "--no-delay", "--no-color")
    finally:
        os.close(lock)
    assert "Running: the run holds its folder now" in live and "did not finish" not in live
    cut = replay_output(str(folder), "--no-delay", "--no-color")
    assert "Stop: the run did not finish" in cut and "Running:" not in cut


def test_batch_folder_lists_units_and_replays_one(make_scenario, tmp_path, capsys):
    folder = run_folder([str(make_scenario(topics=1)), "--vary", "seed=1,2"], tmp_path / "batch")
    listing = replay_output(str(folder))
    assert "2 units; replay one with --unit ID" in listing
    assert re.search(r"^  seed-1  completed", listing, re.M) and re.search(r"^  seed-2  ", listing, re.M)
    text = replay_output(str(folder), "--unit", "seed-2", "--no-delay")
    assert "unit seed-2" in text and "=== Topic 1/1:" in text
    assert main(["replay", str(folder), "--unit", "seed-3"]) == 2
    err = capsys.readouterr().err
    assert "no unit 'seed-3' (did you mean 'seed-" in err and "units: seed-1, seed-2" in err


# ---------------------------------------------------------------- transcripts: cut off, old versions

def test_cut_off_transcript_loads_to_last_complete_event_and_replays(demo_t, tmp_path):
    data = demo_t.read_bytes()
    complete = data.count(b"\n") - 3
    cut = data[: [i for i, b in enumerate(data) if b == 10][complete - 1] + 1]
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(cut + data[len(cut): len(cut) + 25])  # half of the next line
    loaded = load(torn)
    assert loaded.torn_tail and len(loaded.events) == complete
    assert loaded.events == load(demo_t).events[:complete]
    text = replay_output(str(torn), "--no-delay")
    assert "did not finish" in text and "cut off mid-write" in text
    assert "did not finish" in render_html([loaded], [view_of(loaded.started)])


def to_v0(event: dict) -> dict | None:
    """The made-up pre-release format v0: messages keep `text` instead of `content`, no `calls`,
    no call events."""
    if event["type"] == "call":
        return None
    if event["type"] == "run_started":
        return {k: v for k, v in event.items() if k != "schema_version"}
    if event["type"] == "message":
        event = {k: v for k, v in event.items() if k not in ("content", "calls")} | {"text": event["content"]}
    return event


def test_version_0_transcript_is_migrated_on_load(demo_t, tmp_path):
    assert set(STEPS) == set(range(SCHEMA_VERSION))  # every older version has a step
    old = tmp_path / "v0.jsonl"
    v0 = [to_v0(json.loads(line)) for line in demo_t.read_text().splitlines()]
    old.write_text("".join(json.dumps(e) + "\n" for e in v0 if e is not None))
    assert '"text"' in old.read_text() and '"content"' not in old.read_text()
    loaded, current = load(old), load(demo_t)
    assert loaded.migrated_from == 0 and current.migrated_from is None
    assert loaded.messages == current.messages and loaded.of_type(Verdict) == current.of_type(Verdict)
    assert "upgraded on load" in replay_output(str(old), "--no-delay")


def test_version_1_conference_transcript_loads_and_replays(demo_t, tmp_path):
    """A conference transcript as the previous moot wrote it: schema 1, no call events."""
    v1 = [e for e in map(json.loads, demo_t.read_text().splitlines()) if e["type"] != "call"]
    v1[0]["schema_version"] = 1
    old = tmp_path / "v1.jsonl"
    old.write_text("".join(json.dumps({**e, "seq": n}) + "\n" for n, e in enumerate(v1, 1)))
    loaded, current = load(old), load(demo_t)
    assert loaded.migrated_from == 1 and loaded.started.schema_version == SCHEMA_VERSION
    assert [(m.speaker, m.action, m.content) for m in loaded.messages] == \
        [(m.speaker, m.action, m.content) for m in current.messages]
    assert loaded.calls == [] and loaded.completed
    assert "upgraded on load" in replay_output(str(old), "--no-delay")


def test_newer_transcript_is_refused(demo_t, tmp_path):
    lines = demo_t.read_text().splitlines()
    first = json.loads(lines[0]) | {"schema_version": SCHEMA_VERSION + 1}
    newer = tmp_path / "newer.jsonl"
    newer.write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n")
    with pytest.raises(TranscriptError, match="newer than this moot reads"):
        load(newer)


def v1_item_folder(folder: Path) -> Path:
    """A batch folder as the previous moot wrote it: rows naming runs/X/transcripts/ID.jsonl, v1 items."""
    (folder / "transcripts").mkdir(parents=True)
    events = [{"type": "item_started", "seq": 1, "ts": "t", "protocol": "cola", "item_id": "7",
               "inputs": {"text": "Cut taxes now!", "target": "taxes"}, "gold": "favor",
               "models": {"judger": "scripted"}},
              {"type": "call", "seq": 2, "ts": "t", "role": "judger", "stage": "conclusion", "model": "scripted",
               "messages": [{"type": "UserMessage", "source": "user", "content": "which stance?"}],
               "reply": '{"stance": "against"}'},
              {"type": "item_finished", "seq": 3, "ts": "t", "prediction": "against", "explanation": "",
               "raw": '{"stance": "against"}'}]
    (folder / "transcripts" / "7.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (folder / "run.json").write_text(json.dumps({"protocol": "cola", "labels": ["favor", "against", "neutral"]}))
    row = {"id": "7", "prediction": "against", "gold": "favor", "transcript": f"runs/{folder.name}/transcripts/7.jsonl"}
    (folder / "results.jsonl").write_text(json.dumps(row) + "\n")
    return folder


def test_old_batch_folder_replays_and_exports(tmp_path):
    folder = v1_item_folder(tmp_path / "old")
    text = replay_output(str(folder), "--no-delay")
    assert "=== Conclusion ===" in text and "upgraded on load" in text
    assert "⇒ stance: against (gold favor, wrong)" in text
    page = tmp_path / "old.html"
    assert main(["export", str(folder), "--out", str(page)]) == 0
    assert "Cut taxes now!" in page.read_text()


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


def parsed(page: str) -> Elements:
    found = Elements()
    found.feed(page)
    return found


def test_html_export_is_self_contained_and_complete(demo, demo_t, tmp_path):
    out = tmp_path / "run.html"
    assert main(["export", str(demo), "--format", "html", "--out", str(out)]) == 0
    page = out.read_text()
    t = load(demo_t)
    found = parsed(page)
    assert found.tags["script"] == found.tags["link"] == found.tags["img"] == found.tags["iframe"] == 0
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//|@import|url\(", page)
    assert "Content-Security-Policy" in page
    assert found.classes["article.entry"] == len(t.of_type(Message))
    assert found.classes["span.verdict"] == len(t.of_type(Verdict)) == 5
    for verdict in ("AGREEMENT", "MORE_DEBATE", "UNPARSED"):
        assert found.classes[f"span.v-{verdict}"] >= 1
    assert found.classes["rect.bar"] == 10 * len(t.of_type(Score))
    assert found.classes["div.coverage"] == len(t.of_type(Coverage)) == 1
    assert "reference coverage of topic 1: 0/7 items (0%)" in page
    assert found.classes["div.avatar"] == len(t.of_type(Message))
    for text in (t.started.scenario_sha256, "scenarios/drug_policy.yaml", "scripted:MORE_DEBATE,AGREEMENT,GARBAGE",
                 "Tokens and latency per role", "completed — all topics closed", "repeat_penalty"):
        assert text in page


def test_everything_recorded_is_escaped(xss):
    t = load(xss)
    assert any(PAYLOAD in m.content for m in t.of_type(Message))
    page = render_html([t], [view_of(t.started)])
    found = parsed(page)
    assert found.tags["script"] == 0 and found.tags["img"] == 0 and found.tags["b"] == 0
    assert "<script" not in page and "<img" not in page and "&lt;img src=x onerror=alert(3)&gt;" in page
    assert any(PAYLOAD in text for text in found.contents)  # shown as text
    markdown = render_markdown([t], [view_of(t.started)])
    assert "<script>" not in markdown and "<img" not in markdown and "&lt;script&gt;" in markdown


def inject(folder: Path, text: str) -> Path:
    """The folder's transcript with `text` as every message's content and the outcome's explanation."""
    path = the_transcript(folder)
    events = [json.loads(line) for line in path.read_text().splitlines()]
    for event in events:
        if event["type"] == "message":
            event["content"] = text
        if event["type"] == "outcome":
            event["explanation"] = text
    hostile = folder.parent / f"{folder.name}-hostile.jsonl"
    hostile.write_text("".join(json.dumps(e) + "\n" for e in events))
    return hostile


def test_markdown_export_neutralises_links_images_and_html(items):
    import markdown_it  # the test extra

    hostile = load(inject(items["cola"], MARKDOWN_PAYLOAD))
    text = render_markdown([hostile], [view_of(hostile.started)])  # the result is called "stance", as COLA names it
    renderer = markdown_it.MarkdownIt("gfm-like", {"html": True, "linkify": True})
    html = renderer.render(text)
    tokens = [t for block in renderer.parse(text) for t in [block, *(block.children or [])]]
    kinds = {t.type for t in tokens}
    assert not kinds & {"link_open", "image", "html_inline", "html_block", "code_inline"}, kinds
    assert "<a " not in html and "<img" not in html and "<script" not in html and "<b>" not in html
    assert "[click](https://evil.example/)" in html  # shown as the text it was
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&amp;lt;script&amp;gt;" in html
    assert html.count("<strong>bold</strong>") == 0 and "**bold**" in html
    assert inline("a|b") == "a\\|b"  # a table cell stays one cell


def test_markdown_export(demo, tmp_path):
    out = tmp_path / "notes.md"
    assert main(["export", str(demo), "--out", str(out)]) == 0  # format from the suffix
    text = out.read_text()
    assert text.startswith("# Find a new approach")
    assert text.count("\n## Topic ") == 3 and "## Closing" in text and "### Round 2" in text
    assert "**Verdict: `UNPARSED`**" in text and "| emotional_intelligence | `███████   ` 7 |" in text
    assert "| total | 25 |" in text and "| Judge | judge | scripted:MORE_DEBATE,AGREEMENT,GARBAGE |" in text
    assert "**reference coverage of topic 1: 0/7 items (0%); not covered: health," in text
    assert "| Reference item | Status | Evidence |" in text and "| public | not covered |  |" in text
    assert "| Assessor | assessor | scripted |" in text


def test_export_defaults_beside_the_run_and_to_stdout(demo_t, tmp_path, capsys):
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(demo_t.read_bytes())
    assert main(["export", str(copy)]) == 0
    assert (tmp_path / "copy.html").read_text().startswith("<!DOCTYPE html>")
    capsys.readouterr()
    assert export.run([str(copy), "--format", "md", "--out", "-"]) == 0
    assert capsys.readouterr().out.startswith("# Find a new approach")
    assert main(["export", str(tmp_path / "missing.jsonl")]) == 2


def test_item_exports_show_input_stages_and_outcome(items, tmp_path):
    page = tmp_path / "cola.html"
    assert main(["export", str(items["cola"]), "--out", str(page)]) == 0
    html = page.read_text()
    t = load(the_transcript(items["cola"]))
    found = parsed(html)
    assert found.classes["article.entry"] == len(t.messages) == 7
    for heading in ("Input", "Analysis", "Debate", "Conclusion", "Outcome"):
        assert f">{heading}</h2>" in html
    assert html.index(">Analysis<") < html.index(">Debate<") < html.index(">Conclusion<") < html.index(">Outcome<")
    assert 'data-speaker="judger" data-stage="conclusion" data-round="1" data-decision="favor"' in html
    assert "stance: favor — decided by judger" in html and t.started.inputs["text"].split("'")[0] in html
    md = tmp_path / "s2mad.md"
    assert main(["export", str(items["s2mad"]), "--out", str(md)]) == 0
    text = md.read_text()
    for heading in ("## Stance separation", "## Initial opinion", "## Debate", "### Round 2", "## Judge", "## Outcome"):
        assert heading in text
    assert "**veracity:" in text
    md = tmp_path / "negotiation.md"
    assert main(["export", str(items["negotiation"]), "--out", str(md)]) == 0
    text = md.read_text()
    assert text.count("## First-&gt;second") == 1 and text.count("## Second-&gt;first") == 1


def test_batch_export_is_one_document_with_a_section_per_unit(make_scenario, tmp_path):
    folder = run_folder([str(make_scenario(topics=1)), "--vary", "seed=1,2"], tmp_path / "batch")
    page = tmp_path / "batch.html"
    assert main(["export", str(folder), "--out", str(page)]) == 0
    html = page.read_text()
    assert html.count('<h2 id="unit-') == 2 and ">Unit seed-1</h2>" in html and ">Unit seed-2</h2>" in html
    assert '<a href="#unit-1">Unit seed-1</a>' in html
    assert parsed(html).classes["article.entry"] == sum(len(load(folder / f"seed-{n}.jsonl").messages)
                                                        for n in (1, 2))
    assert main(["export", str(folder), "--unit", "seed-2"]) == 0
    single = (tmp_path / "batch-seed-2.html").read_text()
    assert "Unit seed-1" not in single and "unit seed-2" in single
