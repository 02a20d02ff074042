"""The Ollama backend at the HTTP level, against a loopback stand-in for Ollama's documented
`POST /api/chat` (non-streaming): what moot sends (model, options, `format` schema) and how it
reads the reply. No Ollama server can be installed here; the wire format is the contract.
"""

from __future__ import annotations

import json

from backend_support import (
    CORE_EVENTS, MAX_TOKENS, RecordingServer, assert_real_messages, assert_structured_ok,
    loopback_only, of_type, read_events, write_scenario,  # noqa: F401
)
from moot.cli import main
from moot.models.structured import reply_budget
from moot.protocols.conference.verdicts import CRITERIA, EvaluatorScores, JudgeVerdict

PROMPT_EVAL_COUNT, EVAL_COUNT = 31, 17
SCORES = {**{c: 6 for c in CRITERIA}, "overall": 7, "rationale": "Focused and civil."}


def ollama_chat(path: str, body: dict) -> tuple[int, dict]:
    """Ollama's /api/chat, non-streaming: a verdict or scores when asked for a schema, else prose."""
    if path != "/api/chat":
        return 404, {"error": f"unexpected path {path}"}
    schema = body.get("format")
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    if "verdict" in properties:
        content = json.dumps({"verdict": "AGREEMENT", "reason": "Both accept health and justice criteria."})
    elif "clarity" in properties:
        content = json.dumps(SCORES)
    elif "decision" in properties:
        content = json.dumps({"decision": "NEXT_TOPIC", "message": "Let us move on."})
    else:
        content = f"{body['model']} says: health harms, costs and civil liberties should all count."
    return 200, {
        "model": body["model"], "created_at": "2025-01-01T00:00:00.000000Z",
        "message": {"role": "assistant", "content": content},
        "done": True, "done_reason": "stop", "total_duration": 5_000_000, "load_duration": 1_000_000,
        "prompt_eval_count": PROMPT_EVAL_COUNT, "prompt_eval_duration": 1_000_000,
        "eval_count": EVAL_COUNT, "eval_duration": 3_000_000,
    }


def test_conference_over_ollama_http_api(tmp_path, capsys):
    out = tmp_path / "run"
    with RecordingServer(ollama_chat) as server:
        code = main([str(write_scenario(tmp_path)), "--model", "ollama:llama3", "--ollama-host", server.url,
                     "--out", str(out), "--quiet"])
    printed = capsys.readouterr()
    assert code == 0, printed.err

    # One topic, agreement in round 1: open, 2 participants, judge, evaluator, close.
    assert [path for path, _ in server.requests] == ["/api/chat"] * 6
    bodies = [body for _, body in server.requests]
    structured = {}
    for body in bodies:
        assert body["model"] == "llama3" and body["stream"] is False
        assert body["messages"] and body["messages"][-1]["role"] == "user"
        options = body["options"]
        assert options["temperature"] == 0.7 and options["seed"] == 42
        assert options["repeat_penalty"] == 1.25
        schema = body.get("format")
        if schema:
            structured[schema["title"]] = body
            # A constrained reply must be able to finish: num_predict covers the schema's longest reply.
            output = {"JudgeVerdict": JudgeVerdict, "EvaluatorScores": EvaluatorScores}[schema["title"]]
            assert options["num_predict"] == max(MAX_TOKENS, reply_budget(output))
        else:
            assert options["num_predict"] == MAX_TOKENS  # plain turns: the scenario's max_tokens
    assert set(structured) == {"JudgeVerdict", "EvaluatorScores"}
    assert structured["JudgeVerdict"]["format"] == JudgeVerdict.model_json_schema()
    assert structured["EvaluatorScores"]["format"] == EvaluatorScores.model_json_schema()

    events = read_events(out / "conference.jsonl")
    assert CORE_EVENTS <= {e["type"] for e in events}
    assert events[0]["settings"]["backends"]["ollama_hosts"] == [server.url]
    assert set(events[0]["models"].values()) == {"ollama:llama3"}
    assert events[-1]["status"] == "completed"
    assert_real_messages(events)
    assert assert_structured_ok(events) == ["AGREEMENT"]
    score = of_type(events, "score")[0]
    assert score["scores"] == {c: 6 for c in CRITERIA} and score["overall"] == 7
    assert score["rationale"] == "Focused and civil."
    for m in of_type(events, "message"):
        assert m["usage"] == {"prompt_tokens": PROMPT_EVAL_COUNT, "completion_tokens": EVAL_COUNT}
        assert m["model"] == "ollama:llama3"


def test_ollama_http_error_fails_the_run_with_its_cause(tmp_path):
    def broken(path, body):
        return 500, {"error": "model runner crashed"}

    out = tmp_path / "run"
    with RecordingServer(broken) as server:
        code = main([str(write_scenario(tmp_path, attempts=2)), "--model", "ollama:llama3",
                     "--ollama-host", server.url, "--out", str(out), "--quiet"])
    assert code == 1
    assert len(server.requests) == 2  # retry.attempts, then give up
    events = read_events(out / "conference.jsonl")
    error = of_type(events, "error")[0]
    assert error["attempts"] == 2 and error["speaker"] == "Moderator"
    assert "model runner crashed" in error["cause"] and "500" in error["cause"], error
    assert events[-1]["status"] == "failed"
