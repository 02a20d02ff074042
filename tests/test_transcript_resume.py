"""Transcripts (round trip, torn tails, corrupt lines, versions), failed runs, and resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from run_support import conference, run_scenario

from moot.cli import EXIT_FAILED, EXIT_OK, main
from moot.log.events import SCHEMA_VERSION, Error, Message, RunFinished, RunResumed, RunStarted, TranscriptError, Usage
from moot.protocols.conference.events import Score, TopicClosed, Verdict
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.log.transcript import EventLog, load

ROOT = Path(__file__).resolve().parents[1]
MORE = "judge=scripted:" + ",".join(["MORE_DEBATE"] * 80)  # same verdicts however often restarted


def events_sample() -> list:
    started = RunStarted(run_id="abc", protocol="conference", scenario_path="s.yaml", scenario_sha256="0" * 64,
                         scenario={"title": "T"}, models={"Judge": "scripted"}, settings={"Judge": {"seed": 1}})
    return [
        started,
        Message(turn=1, speaker="Moderator", role="moderator", action="open", part=0, round=1,
                content="Hello\n\"quoted\" ünïcode", model="scripted", usage=Usage(prompt_tokens=5, completion_tokens=2),
                latency_s=0.25, calls=2),
        Message(turn=2, speaker="Judge", role="judge", action="judge", part=0, round=1, content="bad",
                model="scripted", decision="UNPARSED"),
        Verdict(turn=2, speaker="Judge", topic=0, round=1, verdict="UNPARSED", raw="bad", error="not JSON"),
        TopicClosed(topic=0, rounds=1, closed_by="round_cap"),
        Score(turn=3, speaker="Evaluator", topic=0, model="scripted", scores={"clarity": 3}, overall=4),
        Error(speaker="Judge", stage="model_call", cause="ConnectionError: x", attempts=3),
        RunFinished(status="failed", stop_reason="error: x", wall_s=1.5, totals={"messages": 2}),
        RunResumed(turns_kept=2, models={"Judge": "scripted"}),
    ]


def write(path: Path, events: list) -> None:
    writer = EventLog(path)
    writer.append(events[0])
    writer.append(*events[1:])
    writer.close()


def test_round_trip(tmp_path):
    path = tmp_path / "t.jsonl"
    written = events_sample()
    write(path, written)
    loaded = load(path)
    assert [e.model_dump() for e in loaded.events] == [e.model_dump() for e in written]
    assert [e.seq for e in loaded.events] == list(range(1, 10))
    assert loaded.torn_tail is False and loaded.started.run_id == "abc"
    assert loaded.of_type(RunFinished)[0].status == "failed"
    assert loaded.finished is None  # resumed after it failed: the last invocation has not finished
    assert len(path.read_text().splitlines()) == 9


def test_torn_last_line_is_dropped(tmp_path):
    path = tmp_path / "t.jsonl"
    write(path, events_sample()[:3])
    with open(path, "ab") as handle:
        handle.write(b'{"seq":4,"ts":"x","type":"verdict","turn":2,"speak')
    loaded = load(path)
    assert loaded.torn_tail is True
    assert [e.type for e in loaded.events] == ["run_started", "message", "message"]


def test_a_write_the_disk_refuses_halfway_leaves_none_of_its_events(tmp_path):
    """A call and its message go in one write: a file-size limit reached inside it takes the call off
    again, so a resumed unit never serves a call from the log whose turn was never said."""
    code = f"""
import os, resource, signal, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_transcript_resume import events_sample
from moot.log.transcript import EventLog
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
events = events_sample()
log = EventLog({str(tmp_path / 't.jsonl')!r})
log.append(events[0])
first = len(events[1].model_dump_json()) + 80  # the first event of the write fits whole, not the rest
resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(log.path) + first, resource.RLIM_INFINITY))
try:
    log.append(*events[1:])
except OSError as exc:
    print('refused', exc.errno)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.stdout.startswith("refused"), done.stderr
    kept = load(tmp_path / "t.jsonl")
    assert [type(e).__name__ for e in kept.events] == ["RunStarted"]
    assert (tmp_path / "t.jsonl").read_text(encoding="utf-8").count("\n") == 1


def test_complete_last_line_without_newline_is_kept(tmp_path):
    path = tmp_path / "t.jsonl"
    write(path, events_sample()[:3])
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    loaded = load(path)
    assert loaded.torn_tail is False and len(loaded.events) == 3


@pytest.mark.parametrize("bad, detail", [
    (b'{"seq": 3, "type": "mess', "garbled event: not JSON"),
    (b'{"seq":3,"ts":"","type":"message","turn":"two"}', "bad event: message.turn"),
    (b'{"seq":3,"ts":"","type":"gossip"}', "bad event"),
])
def test_corrupt_middle_line_names_the_line(tmp_path, bad, detail):
    path = tmp_path / "t.jsonl"
    write(path, events_sample()[:4])
    lines = path.read_bytes().split(b"\n")
    lines[2] = bad
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(TranscriptError) as info:
        load(path)
    assert str(info.value).startswith(f"{path}:3: {detail}")


def test_newer_schema_version_is_rejected(tmp_path):
    path = tmp_path / "t.jsonl"
    first = events_sample()[0]
    first.schema_version = SCHEMA_VERSION + 1
    write(path, [first, *events_sample()[1:3]])
    newer = rf"t.jsonl:1: schema_version {SCHEMA_VERSION + 1} is newer than this moot reads \({SCHEMA_VERSION}\)"
    with pytest.raises(TranscriptError, match=newer):
        load(path)


def test_not_a_transcript(tmp_path):
    path = tmp_path / "t.jsonl"
    write(path, events_sample()[1:3])
    with pytest.raises(TranscriptError, match="first event must be run_started"):
        load(path)


def signature(path: Path) -> tuple:
    t = load(path)
    return ([(m.turn, m.speaker, m.action, m.part, m.round, m.decision) for m in t.of_type(Message)],
            [(v.turn, v.verdict) for v in t.of_type(Verdict)], [(s.turn, s.overall) for s in t.of_type(Score)],
            [(c.topic, c.rounds, c.closed_by) for c in t.of_type(TopicClosed)])


def assert_whole(path: Path) -> None:
    """Each turn exactly once, numbered 1..n; seq strictly increasing by 1; run completed."""
    t = load(path)
    assert [m.turn for m in t.of_type(Message)] == list(range(1, len(t.of_type(Message)) + 1))
    assert [e.seq for e in t.events] == list(range(1, len(t.events) + 1))
    assert t.finished.status == "completed" and t.events[-1] is t.finished


def cli(*argv) -> int:
    return main([*map(str, argv), "--quiet"])


def test_failed_call_is_saved_as_failed_then_resumed(make_scenario, tmp_path, capsys):
    path, out = make_scenario(topics=2, max_rounds=2), tmp_path / "run"
    assert cli(path, "--model", "judge=scripted:MORE_DEBATE,FAIL,FAIL,FAIL", "--out", out) == EXIT_FAILED
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-2] == f"transcript: {out / 'conference.jsonl'}"
    assert "conference failed: error: ConnectionError: scripted failure" in captured.err
    assert "run the same command again to continue" in captured.err
    t = conference(out)
    error, finished = t.events[-2], t.events[-1]
    assert (error.type, error.speaker, error.stage, error.cause, error.attempts) == (
        "error", "Judge", "model_call", "ConnectionError: scripted failure", 3)
    assert (finished.status, finished.stop_reason) == ("failed", "error: ConnectionError: scripted failure")
    assert [m.turn for m in t.of_type(Message)] == [1, 2, 3, 4, 5, 6, 7]
    assert not (out / "results.jsonl").exists()  # a failed unit has no result row

    assert cli(path, "--model", MORE, "--out", out, "--resume") == 2  # the judge's script is another model
    assert "holds a run with other models; pass --allow-model-change" in capsys.readouterr().err
    assert cli(path, "--model", MORE, "--out", out, "--resume", "--allow-model-change") == EXIT_OK
    t = conference(out)
    resumed = t.of_type(RunResumed)
    assert len(resumed) == 1 and resumed[0].turns_kept == 7 and resumed[0].models_changed
    assert resumed[0].models["Judge"] == MORE.partition("=")[2]
    assert json.loads((out / "run.json").read_text())["model_changes"][0]["to"]["Judge"] == MORE.partition("=")[2]
    assert_whole(out / "conference.jsonl")
    assert [(c.topic, c.rounds, c.closed_by) for c in t.of_type(TopicClosed)] == [(0, 2, "round_cap"), (1, 2, "round_cap")]
    assert [e.status for e in t.of_type(RunFinished)] == ["failed", "completed"]
    capsys.readouterr()
    assert cli(path, "--model", MORE, "--out", out) == EXIT_OK  # a completed run: nothing to do, nothing sent
    assert "backend_calls=0" in capsys.readouterr().out.splitlines()[-1]
    assert load(out / "conference.jsonl").events == t.events


def run_with(path: Path, out: Path, clients: dict):
    code = run_scenario(path, out, clients=clients)
    return code, conference(out)


def test_all_attempts_failing_records_cause_and_attempts(make_scenario, tmp_path):
    alice = ScriptedChatCompletionClient(fail_calls=[1, 2, 3])
    code, t = run_with(make_scenario(topics=1), tmp_path / "run", {"Alice": alice})
    assert code == EXIT_FAILED and len(alice.requests) == 3
    errors = t.of_type(Error)
    assert [(e.speaker, e.cause, e.attempts) for e in errors] == [("Alice", "ConnectionError: scripted failure", 3)]
    assert [m.speaker for m in t.of_type(Message)] == ["Moderator"]
    assert [e.type for e in t.events] == ["run_started", "call", "message", "error", "run_finished"]
    assert t.finished.status == "failed" and t.finished.totals["messages"] == 1


def test_transient_failure_is_retried(make_scenario, tmp_path):
    alice = ScriptedChatCompletionClient(fail_calls=[1])
    code, t = run_with(make_scenario(topics=1), tmp_path / "run", {"Alice": alice})
    assert code == EXIT_OK and len(alice.requests) == 2
    assert [(m.speaker, m.calls) for m in t.of_type(Message)] == [
        ("Moderator", 1), ("Alice", 2), ("Bob", 1), ("Judge", 1), ("Evaluator", 1), ("Moderator", 1)]
    assert [c.attempts for c in t.calls if c.role == "Alice"] == [2]
    assert t.of_type(Error) == [] and t.finished.totals["calls"] == 7


def test_empty_reply_is_retried(make_scenario, tmp_path):
    code, t = run_with(make_scenario(topics=1), tmp_path / "run",
                       {"Judge": ScriptedChatCompletionClient(["EMPTY", "AGREEMENT"])})
    judge = [m for m in t.of_type(Message) if m.speaker == "Judge"]
    assert code == EXIT_OK and [(m.calls, m.decision) for m in judge] == [(2, "AGREEMENT")]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """A complete 2-topic run (every topic hits the round cap) and its scenario."""
    directory = tmp_path_factory.mktemp("full")
    lines = ["title: T", "task: Do.", "topics:", "  - one", "  - two", "moderator:", "  name: Moderator",
             "participants:", "  - name: Alice", "  - name: Bob", "judge:", "  name: Judge", "evaluator:",
             "  name: Evaluator", "models:", "  default: scripted", "limits:", "  max_rounds_per_topic: 2"]
    scenario = directory / "s.yaml"
    scenario.write_text("\n".join(lines) + "\n")
    out = directory / "full"
    assert main([str(scenario), "--model", MORE, "--out", str(out), "--quiet"]) == EXIT_OK
    return scenario, out


def cut_run(full: Path, folder: Path, data: bytes) -> Path:
    """A run folder whose conference transcript is `data` (a run killed there), without its cache:
    resuming it must rebuild the conference from the transcript alone."""
    folder.mkdir()
    shutil.copy(full / "run.json", folder / "run.json")
    (folder / "conference.jsonl").write_bytes(data)
    return folder / "conference.jsonl"


def cut_offsets(data: bytes) -> list[tuple[str, int]]:
    ends = [i + 1 for i, b in enumerate(data) if b == ord("\n")]
    cuts = [(f"after line {n + 1}", end) for n, end in enumerate(ends[1:-1], 1)]
    cuts += [(f"inside line {n + 1}", end - 9) for n, end in enumerate(ends) if n > 0]
    return cuts


def test_killed_at_any_byte_offset_loads_and_resumes_to_the_same_run(uninterrupted, tmp_path, capsys):
    scenario, full = uninterrupted
    data, expected = (full / "conference.jsonl").read_bytes(), signature(full / "conference.jsonl")
    assert len(expected[0]) == 19 and expected[3] == [(0, 2, "round_cap"), (1, 2, "round_cap")]
    cuts = cut_offsets(data)
    assert len(cuts) == 2 * len(data.splitlines()) - 3
    for where, offset in cuts:
        path = cut_run(full, tmp_path / f"cut{offset}", data[:offset])
        kept = load(path)  # a kill at any moment leaves a loadable file
        assert kept.torn_tail == (not data[:offset].endswith(b"\n")), where
        assert cli(scenario, "--model", MORE, "--out", path.parent) == EXIT_OK, (where, capsys.readouterr().err)
        assert signature(path) == expected, where
        assert_whole(path)
        resumed = load(path).of_type(RunResumed)[0]
        assert 0 <= resumed.turns_kept <= len(expected[0])
        calls = [c.key for c in load(path).calls]  # no call recorded twice, none missing
        assert len(calls) == len(set(calls)) == len(expected[0]), where
        if kept.torn_tail:  # the torn line is set aside, never glued to the next event
            assert (path.parent / "conference.jsonl.torn").read_bytes().rstrip(b"\n") == data[:offset].rsplit(b"\n", 1)[1]
    capsys.readouterr()


def test_cut_between_a_verdict_and_its_topic_closed_completes_that_turn(uninterrupted, tmp_path):
    scenario, full = uninterrupted
    data = (full / "conference.jsonl").read_bytes()
    lines = data.splitlines(keepends=True)
    closed = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "topic_closed")
    path = cut_run(full, tmp_path / "cut", b"".join(lines[:closed]))  # judge message + verdict, no topic_closed
    assert cli(scenario, "--model", MORE, "--out", path.parent) == EXIT_OK
    t = load(path)
    judge_turn = json.loads(lines[closed - 2])["turn"]
    assert t.of_type(RunResumed)[0].turns_kept == judge_turn  # the turn is kept, its topic_closed written
    kinds = [e.type for e in t.events]
    assert kinds[closed:closed + 2] == ["run_resumed", "topic_closed"]
    assert signature(path) == signature(full / "conference.jsonl")


def test_blank_lines_are_harmless_and_resume_deletes_nothing(uninterrupted, tmp_path):
    scenario, full = uninterrupted
    lines = (full / "conference.jsonl").read_bytes().splitlines(keepends=True)
    kept = lines[:12]
    path = cut_run(full, tmp_path / "blank", b"".join(kept[:5]) + b"\n  \n" + b"".join(kept[5:]))
    before = path.read_bytes()
    assert cli(scenario, "--model", MORE, "--out", path.parent) == EXIT_OK
    assert path.read_bytes().startswith(before)  # appended to, never rewritten
    assert signature(path) == signature(full / "conference.jsonl")


def test_a_duplicated_event_line_is_an_error_naming_it(uninterrupted, tmp_path, capsys):
    scenario, full = uninterrupted
    lines = (full / "conference.jsonl").read_bytes().splitlines(keepends=True)
    path = cut_run(full, tmp_path / "dup", b"".join(lines[:6] + [lines[5]] + lines[6:10]))
    with pytest.raises(TranscriptError, match=rf"{path}:7: duplicated event"):
        load(path)
    assert cli(scenario, "--model", MORE, "--out", path.parent) == 2
    assert f"{path}:7: duplicated event" in capsys.readouterr().err


def test_real_process_killed_then_resumed(tmp_path):
    lines = ["title: Long", "task: Do.", "topics:"] + [f"  - topic {i}" for i in range(20)]
    lines += ["moderator:", "  name: Moderator", "participants:", "  - name: Alice", "  - name: Bob",
              "judge:", "  name: Judge", "evaluator:", "  name: Evaluator", "models:", "  default: scripted",
              "limits:", "  max_rounds_per_topic: 3", "  max_messages: 2000"]
    scenario = tmp_path / "long.yaml"
    scenario.write_text("\n".join(lines) + "\n")
    folder = tmp_path / "killed"
    out = folder / "conference.jsonl"
    judge = "judge=scripted:" + ",".join(["MORE_DEBATE"] * 60)
    proc = subprocess.Popen([sys.executable, str(ROOT / "run_conference.py"), str(scenario), "--model", judge,
                             "--out", str(folder), "--quiet"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and b'"type":"message"' in out.read_bytes():
            break
        time.sleep(0.002)
    was_running = proc.poll() is None
    if was_running:
        os.kill(proc.pid, signal.SIGKILL)
    code = proc.wait(timeout=30)
    assert code == (-signal.SIGKILL if was_running else 0), proc.stderr.read()
    proc.stderr.close()
    killed = load(out)
    assert any(isinstance(e, Message) for e in killed.events)
    full = tmp_path / "full"
    assert main([str(scenario), "--model", judge, "--out", str(full), "--quiet"]) == EXIT_OK
    if was_running:
        assert killed.finished is None
        assert main([str(scenario), "--model", judge, "--out", str(folder), "--quiet"]) == EXIT_OK
    assert_whole(out)
    assert signature(out) == signature(full / "conference.jsonl")
    assert len(signature(full / "conference.jsonl")[0]) == 20 * 13 + 1
