"""A conference transcript as moot wrote it before the conference's events moved out of the core
(schema 2): it loads, and replay, Markdown and HTML read it exactly as that moot did (its output
is kept in tests/data/schema2/), but for the line that says it was upgraded on load. (export.md
was written again when Markdown escaping became minimal, moot.views.neutral: the old and the new
file render to the same HTML.)"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import moot
from moot.cli import replay
from moot.log.transcript import load

DATA = Path(__file__).parent / "data" / "schema2"
UPGRADED = ("(written with transcript schema version 2; upgraded on load)\n",
            "| Transcript | schema version 2, upgraded on load |\n",
            "<tr><th>Transcript</th><td>schema version 2, upgraded on load</td></tr>\n")
SCENARIO = {
    "protocol": "conference", "title": "Schema two", "task": "Decide two things.",
    "topics": ["what counts as success", "how to pay for it"],
    "moderator": {"name": "Moderator", "persona": "A chair."},
    "participants": [{"name": "Alice", "label": "Dr. Alice", "persona": "A nurse."}, {"name": "Bob", "persona": ""}],
    "judge": {"name": "Judge"}, "evaluator": {"name": "Evaluator"}, "assessor": {"name": "Assessor"},
    "limits": {"max_rounds_per_topic": 2, "max_messages": 200}, "routing": {"agreement": "judge"},
}
ROLES = {"Moderator": "moderator", "Alice": "participant", "Bob": "participant", "Judge": "judge",
         "Evaluator": "evaluator", "Assessor": "assessor"}
CRITERIA = ("clarity", "relevance", "flow")


def turn(n: int, speaker: str, action: str, topic: int | None, round_: int, content: str, **extra) -> dict:
    return {"type": "message", "turn": n, "speaker": speaker, "role": ROLES[speaker], "action": action,
            "topic": topic, "round": round_, "content": content, "model": "scripted",
            "usage": {"prompt_tokens": 10 * n, "completion_tokens": n}, "latency_s": n / 10, **extra}


def schema2_events() -> list[dict]:
    """Two topics: one closed at the round cap (a measured MORE_DEBATE, an unparsed verdict, written
    scores, a coverage check of every status), one by agreement (measured scores); a rescoring's
    unparsed scores and a measured grade of a judge decision; the closing; an error, a resume."""
    measured = {"method": "likelihood", "distributions": {c: {"7": 0.5, "6": 0.3, "8": 0.2} for c in CRITERIA}}
    events = [
        {"type": "run_started", "schema_version": 2, "run_id": "0123456789abcdef", "protocol": "conference",
         "scenario_path": "scenarios/two.yaml", "scenario_sha256": "ab" * 32, "scenario": SCENARIO,
         "models": {name: "scripted" for name in ROLES}, "settings": {"Alice": {"temperature": 0.7, "seed": 1}},
         "seed": 1, "versions": {"python": "3.11.9", "moot": "0.1.0"}, "unit": "conference"},
        {"type": "call", "role": "Moderator", "stage": "open", "model": "scripted", "reply": "Welcome.",
         "messages": [{"type": "UserMessage", "source": "user", "content": "Open the topic."}]},
        turn(1, "Moderator", "open", 0, 1, "Welcome. What counts as success?"),
        turn(2, "Alice", "speak", 0, 1, "Fewer deaths. [a link](https://x.example) <b>bold</b>", cut=True),
        turn(3, "Bob", "speak", 0, 1, "Lower crime."),
        turn(4, "Judge", "judge", 0, 1, '{"verdict": "MORE_DEBATE"}', decision="MORE_DEBATE",
             measured={"method": "likelihood", "probabilities": {"agree": 0.3}, "threshold": 0.6}),
        {"type": "verdict", "turn": 4, "speaker": "Judge", "topic": 0, "round": 1, "verdict": "MORE_DEBATE",
         "reason": "p(agree)=0.30 < 0.60 (measured: likelihood)", "method": "likelihood",
         "probabilities": {"agree": 0.3}, "threshold": 0.6},
        turn(5, "Alice", "speak", 0, 2, "Health first."),
        turn(6, "Judge", "judge", 0, 2, "maybe?", decision="UNPARSED"),
        {"type": "verdict", "turn": 6, "speaker": "Judge", "topic": 0, "round": 2, "verdict": "UNPARSED",
         "raw": "maybe?", "error": "no verdict: neither AGREEMENT nor MORE DEBATE"},
        turn(7, "Evaluator", "evaluate", 0, 2, json.dumps({**{c: 7 for c in CRITERIA}, "overall": 7,
                                                            "rationale": "Civil."})),
        {"type": "score", "turn": 7, "speaker": "Evaluator", "topic": 0, "model": "scripted",
         "scores": {c: 7 for c in CRITERIA}, "overall": 7, "rationale": "Civil."},
        turn(8, "Assessor", "assess", 0, 2, '{"health": {"covered": true}}'),
        {"type": "coverage", "turn": 8, "speaker": "Assessor", "topic": 0, "model": "scripted", "covered": 1,
         "total": 4, "fraction": 0.25, "raw": '{"health": ...}', "method": "likelihood", "items": [
             {"name": "health", "status": "covered", "evidence": "Fewer deaths.", "turn": 2, "probability": 0.9},
             {"name": "crime", "status": "not_covered", "probability": 0.2},
             {"name": "cost", "status": "unverified", "evidence": "cheap", "error": "the quote is not in the debate"},
             {"name": "public", "status": "unparsed", "error": "no answer"}]},
        {"type": "topic_closed", "topic": 0, "rounds": 2, "closed_by": "round_cap"},
        turn(9, "Moderator", "open", 1, 1, "How to pay?"),
        turn(10, "Alice", "speak", 1, 1, "Taxes."),
        turn(11, "Judge", "judge", 1, 1, '{"verdict": "AGREEMENT", "reason": "They agree."}', decision="AGREEMENT"),
        {"type": "verdict", "turn": 11, "speaker": "Judge", "topic": 1, "round": 1, "verdict": "AGREEMENT",
         "reason": "They agree."},
        turn(12, "Evaluator", "evaluate", 1, 1, json.dumps({**{c: 6.8 for c in CRITERIA}, "overall": 6.5,
                                                             "rationale": "Brief."}),
             measured={"method": "likelihood", "distributions": measured["distributions"]}),
        {"type": "score", "turn": 12, "speaker": "Evaluator", "topic": 1, "model": "scripted",
         "scores": {c: 6.8 for c in CRITERIA}, "overall": 6.5, "rationale": "Brief.", **measured},
        {"type": "topic_closed", "topic": 1, "rounds": 1, "closed_by": "agreement"},
        turn(13, "Moderator", "close", None, 1, "Thank you all."),
        {"type": "error", "speaker": "Judge", "stage": "model_call", "cause": "ConnectionError: x", "attempts": 3},
        {"type": "run_finished", "status": "failed", "stop_reason": "error: x", "wall_s": 1.5},
        {"type": "run_resumed", "turns_kept": 13, "models": {"Judge": "scripted:AGREEMENT"}, "models_changed": True},
        {"type": "score", "turn": 12, "speaker": "rescore:other", "topic": 1, "model": "other", "parsed": False,
         "raw": "{not json", "error": "not JSON"},
        {"type": "score", "turn": 11, "speaker": "grader:other", "topic": 1, "model": "other",
         "kind": "judge_decision", "scores": {"correctness_format": 7.4}, "overall": 7.4, "rationale": "Fair.",
         "method": "likelihood", "distributions": {"correctness_format": {"7": 0.6, "8": 0.4}}},
        {"type": "run_finished", "status": "completed", "stop_reason": "all topics closed", "wall_s": 0.5},
    ]
    return [{"seq": n, "ts": "2025-01-02T03:04:05.678+00:00", **e} for n, e in enumerate(events, 1)]


@pytest.fixture
def schema2(tmp_path) -> Path:
    path = tmp_path / "conference.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in schema2_events()), encoding="utf-8")
    return path


def rendered(path: Path) -> dict[str, str]:
    """Replay (whole, and its second topic), Markdown and HTML of a transcript, its path as `RUN`."""
    out = {}
    for name, argv in (("replay.txt", []), ("replay-topic-2.txt", ["--topic", "2"])):
        stream = io.StringIO()
        assert replay.run([str(path), "--no-delay", "--no-color", *argv], stream=stream) == 0
        out[name] = stream.getvalue()
    for fmt in ("md", "html"):
        out[f"export.{fmt}"] = moot.document(path, fmt)
    return {name: text.replace(str(path), "RUN") for name, text in out.items()}


def test_a_schema_2_conference_loads_with_its_events_and_topics(schema2):
    t = load(schema2)
    assert t.migrated_from == 2 and t.completed
    assert [m.part for m in t.messages] == [0] * 8 + [1] * 4 + [None]
    kinds = [e.type for e in t.events]
    assert kinds.count("verdict") == 3 and kinds.count("score") == 4 and kinds.count("coverage") == 1
    assert [type(e).__module__ for e in t.events if e.type == "verdict"] == ["moot.protocols.conference.events"] * 3


def test_a_schema_2_conference_reads_as_it_did(schema2):
    for name, text in rendered(schema2).items():
        for line in UPGRADED:
            text = text.replace(line, "")
        assert text == (DATA / name).read_text(encoding="utf-8"), name
