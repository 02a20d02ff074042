"""What a person sees while a conference runs: on a terminal, who speaks and the text as it is
generated, replaced by the turn as recorded; a batch's status line naming the latest turn; plain
output anywhere else. Then what the exports show of measured verdicts and scores and of cut turns."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

from run_support import conference

from moot.contract.registry import view_of
from moot.cli import EXIT_OK, main
from moot.views.console import terminal_rows
from moot.protocols.conference.events import Score
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.views.html import render_html
from moot.views.markdown import render_markdown
from moot.log.transcript import load

CHOICE = "choice: likelihood\nagreement_threshold: 0.6\n"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Hostile(ScriptedChatCompletionClient):
    """A base model whose text, as it streams, tries to clear the screen and retitle the window."""

    async def create_stream(self, messages, **kwargs):
        yield "\x1b[2J\x1b]0;owned\x07Hello. "
        async for item in super().create_stream(messages, **kwargs):
            yield item


def labelled(make_scenario, **kwargs) -> Path:
    path = make_scenario(extra=CHOICE, **kwargs)
    path.write_text(path.read_text().replace("  - name: Alice\n", "  - name: Alice\n    label: Dr. Alice\n", 1))
    return path


def live_run(path: Path, out: Path, monkeypatch, screen: io.StringIO, *extra: str, clients=None) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sys, "stdout", screen)
    from moot.cli.run import run as run_command

    code = run_command([str(path), "--out", str(out), "--model", "scripted:BASE", *extra], clients)
    monkeypatch.undo()
    assert code == EXIT_OK
    return screen.getvalue()


def test_on_a_terminal_a_turn_streams_then_is_replaced_by_the_recorded_turn(make_scenario, tmp_path, monkeypatch):
    text = live_run(labelled(make_scenario, topics=1), tmp_path / "run", monkeypatch, Terminal())
    start = "[T1 R1] \x1b[1;33mDr. Alice\x1b[0m (speak …):\n"
    assert start in text
    streamed = text.split(start, 1)[1].split("\r", 1)[0]
    assert streamed.startswith("(scripted) I have a point on")  # the text as it was generated
    rows = terminal_rows("[T1 R1] Dr. Alice (speak …):\n" + streamed, 80)
    recorded = f"\r\x1b[{rows - 1}A\x1b[J[T1 R1] \x1b[1;33mDr. Alice\x1b[0m (speak, 0.0s):\n"
    assert recorded in text  # erased up to its first row, then the turn as recorded
    assert text.count("(speak …)") == text.count("(speak, ") == 2  # every turn streamed, every turn replaced
    assert "[T1 R1] \x1b[1;35mJudge\x1b[0m (judge …):\n\r\x1b[1A\x1b[J[T1 R1] \x1b[1;35mJudge\x1b[0m (judge, " in text
    verdict = text.split("(judge, 0.0s):\n", 1)[1]
    assert verdict.startswith("AGREEMENT\n\x1b[1m  ⇒ verdict: AGREEMENT — p(agree)=0.70 >= 0.60 (measured: scripted)")
    evaluation = text.split("(evaluate, 0.0s):\n", 1)[1]  # the rationale, then the measured scores
    assert evaluation.startswith("(scripted) I have a point on") and "Evaluator expected scores (measured: scripted): " \
        "overall=7.0 | clarity=7.0" in evaluation


def test_streamed_text_cannot_drive_the_terminal(make_scenario, tmp_path, monkeypatch):
    hostile = {"Alice": Hostile(["BASE"])}
    others = {name: ScriptedChatCompletionClient(["BASE"]) for name in ("Moderator", "Bob", "Judge", "Evaluator")}
    text = live_run(labelled(make_scenario, topics=1), tmp_path / "run", monkeypatch, Terminal(),
                    clients={**hostile, **others})
    assert "(speak …):\nHello. (scripted)" in text  # shown as it streamed, made safe
    assert "[2J" not in text and "owned" not in text and "\x07" not in text


def test_elsewhere_the_output_is_plain(make_scenario, tmp_path, monkeypatch):
    text = live_run(labelled(make_scenario, topics=1), tmp_path / "run", monkeypatch, io.StringIO())
    assert "\x1b" not in text and "\r" not in text and "…):" not in text
    assert "\n[T1 R1] Dr. Alice (speak, 0.0s):\n(scripted) I have a point on" in text
    quiet = live_run(labelled(make_scenario, topics=1), tmp_path / "quiet", monkeypatch, Terminal(), "--quiet")
    assert "\x1b" not in quiet and "[T1 R1]" not in quiet and quiet.lstrip().startswith("== Summary")


def test_a_batch_status_line_names_the_turn_in_progress_on_a_terminal_only(make_scenario, tmp_path, monkeypatch,
                                                                           capsys):
    from moot.api.console import BatchStatus

    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(BatchStatus, "REDRAW_S", 0.0)
    errors = Terminal()
    monkeypatch.setattr(sys, "stderr", errors)
    path = labelled(make_scenario, topics=1)
    assert main([str(path), "--out", str(tmp_path / "tty"), "--model", "scripted:BASE", "--vary", "seed=1,2"]) == 0
    monkeypatch.undo()
    shown = errors.getvalue()
    assert "\r\x1b[2K[0/2] ETA ? " in shown and " · seed-1: Dr. Alice (speak, T1 R1)" in shown
    assert " · seed-2: Evaluator (evaluate, T1 R1)" in shown
    capsys.readouterr()
    assert main([str(path), "--out", str(tmp_path / "plain"), "--model", "scripted:BASE", "--vary", "seed=1,2"]) == 0
    plain = capsys.readouterr().err
    assert "\x1b" not in plain and "\r" not in plain and " · " not in plain
    assert plain.splitlines()[0].startswith("[0/2] ETA ?") and plain.splitlines()[-1].startswith("[2/2] ETA 0s")


def test_exports_show_what_was_measured_and_what_was_cut(make_scenario, tmp_path):
    clients = {name: ScriptedChatCompletionClient(["BASE"]) for name in ("Alice", "Bob", "Judge", "Evaluator")}
    clients["Moderator"] = ScriptedChatCompletionClient(["BASE"], max_tokens=20)
    from moot.cli.run import run as run_command

    out = tmp_path / "run"
    assert run_command([str(labelled(make_scenario, topics=1)), "--out", str(out), "--quiet"], clients) == EXIT_OK
    t = conference(out)
    page = render_html([t], [view_of(t.started)])
    assert '<span class="badge verdict v-AGREEMENT">AGREEMENT</span><span class="badge measured">p(agree)=0.70, ' \
           'measured</span>' in page
    assert "<strong>Expected scores (measured: scripted)</strong> by Evaluator · overall <strong>7.0</strong>/10" in page
    assert page.count('<rect class="dist"') == 10 * 10  # the distribution over 1-10 of each criterion
    assert "<title>clarity: p(7)=0.50</title>" in page
    assert page.count('<span class="cut" title="cut at its last full sentence">cut</span>') == 2  # open and close
    assert 'data-speaker="Alice"' in page and '<span class="speaker c1" dir="auto">Dr. Alice</span>' in page
    markdown = render_markdown([t], [view_of(t.started)])
    assert "**Expected scores (measured: scripted)** by Evaluator: overall **7.0**/10" in markdown
    assert "| clarity | `███████   ` 7.0 | 7: 50%, 6: 25%, 8: 25% |" in markdown
    assert "cut at its last full sentence" in markdown and "**Verdict: `AGREEMENT`** — p(agree)=0.70 &gt;= 0.60" in markdown


def test_rescoring_by_likelihood_grades_and_evaluates_with_distributions(make_scenario, tmp_path, capsys):
    out = tmp_path / "run"
    path = labelled(make_scenario, topics=1)
    assert main([str(path), "--out", str(out), "--model", "scripted:BASE", "--quiet"]) == EXIT_OK
    scored = tmp_path / "scored.jsonl"
    capsys.readouterr()
    assert main(["score", str(out / "conference.jsonl"), "--role", "grader=scripted:BASE",
                 "--role", "evaluator=scripted:BASE", "--out", str(scored)]) == EXIT_OK
    assert re.search(r"^\| 1 \| 1 \| 1 \| AGREEMENT \| 7\.0 \| \(scripted\)", capsys.readouterr().out, re.M)
    t = load(scored)
    grade = next(s for s in t.of_type(Score) if s.kind == "judge_decision")
    assert grade.method == "scripted" and grade.overall == 7.0 and grade.distributions["correctness_format"]["7"] == 0.5
    assert grade.rationale.startswith("(scripted)")
    rescored = [s for s in t.of_type(type(grade)) if s.speaker == "rescore:scripted:BASE"]
    assert len(rescored) == 1 and set(rescored[0].distributions) >= {"clarity", "overall"}
    calls = [c for c in t.calls if c.role == "grader"]
    assert [c.kind for c in calls] == ["score", "continue"]
    assert calls[0].messages[-1]["content"].rstrip().endswith("Answer with one integer from 1 to 10 and nothing else.")
