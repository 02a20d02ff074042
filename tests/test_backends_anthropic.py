"""The Anthropic backend (`anthropic:MODEL`): against llama.cpp's llama-server, which serves
Anthropic's Messages API (`/v1/messages`) over the embedded Gemma GGUF, a chat turn with its
usage, a protocol run end to end with its closed answers asked as structured output (the API has
no log-probabilities), and overloaded (529) and rate-limited (429, Retry-After) replies retried;
at the wire level, against a loopback stand-in, what moot sends (the key from the environment,
never recorded; the schema Anthropic takes) and how a server refusing structured outputs is met;
a Message Batch result line read as the reply or the error a direct call would get (the batch path
itself: tests/test_batch_api.py).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from autogen_core.models import SystemMessage, UserMessage

from backend_support import RecordingServer, loopback_only, read_events, write_scenario  # noqa: F401
from moot.cli import main
from moot.models.backends.anthropic.batch import line_result
from moot.models.backends.anthropic.client import rejects_output_config
from moot.models.backends.anthropic.provider import AnthropicBackend
from moot.models.batch import LineFailed, LineLost, reply_of
from moot.models.calls import FatalModelError, RetryPolicy, complete, is_fatal
from moot.models.factory import build_client
from moot.models.provider import BackendOptions
from moot.protocols.conference.verdicts import CRITERIA, JudgeVerdict
from test_llama_server import ROOT, closed_answers, events_of, results_of, serving

KEY = "sk-ant-test-0123456789abcdef"
SCORES = {**{c: 6 for c in CRITERIA}, "overall": 7, "rationale": "Civil."}


def options(url: str) -> BackendOptions:
    return BackendOptions({"anthropic": AnthropicBackend(base_url=url)})


def ask(url: str, *messages, settings=None, retry=RetryPolicy(attempts=1), output=None):
    """One call through moot's retrying wrapper, and the client's usage totals after it."""
    async def run():
        client = build_client("anthropic:gemma", settings or {"max_tokens": 24, "temperature": 0}, options(url))
        try:
            return await complete(client, list(messages), output=output, retry=retry), client.actual_usage()
        finally:
            await client.close()
    return asyncio.run(run())


HELLO = (SystemMessage(content="Answer in one short sentence."), UserMessage(content="Say hello.", source="user"))


@pytest.fixture(scope="module")
def messages_server(tmp_path_factory):
    """llama-server with a chat template: its /v1/messages turns a Messages request into a chat."""
    with serving(tmp_path_factory.mktemp("anthropic"), "messages", chat_template="gemma", ctx=4096) as found:
        yield found


class Fronted:
    """A loopback proxy in front of a Messages server: each request first takes the next of
    `faults` ((status, headers) answered with an Anthropic error body), then is passed on."""

    def __init__(self, target: str, faults: list[tuple[int, dict]]):
        self.faults, self.seen = list(faults), []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                proxy.seen.append(time.monotonic())
                if proxy.faults:
                    status, headers = proxy.faults.pop(0)
                    data = json.dumps({"type": "error", "error": {"type": "overloaded_error" if status == 529
                                       else "rate_limit_error", "message": "try later"}}).encode()
                else:
                    request = urllib.request.Request(f"{target}{self.path}", data=body, method="POST",
                                                     headers={"Content-Type": "application/json"})
                    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request) as answer:
                        status, headers, data = answer.status, {}, answer.read()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "Fronted":
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.slow
def test_a_chat_turn_through_llama_servers_messages_api_counts_its_usage(messages_server):
    done, usage = ask(messages_server.url, *HELLO)
    assert done.text.strip() and done.attempts == 1
    assert done.prompt_tokens > 0 and 0 < done.completion_tokens <= 24
    assert (usage.prompt_tokens, usage.completion_tokens) == (done.prompt_tokens, done.completion_tokens)
    assert done.finish_reason in ("stop", "length")


@pytest.mark.slow
def test_overloaded_and_rate_limited_replies_are_retried_as_the_server_asks(messages_server):
    faults = [(529, {}), (429, {"Retry-After": "1"})]
    with Fronted(messages_server.url.removesuffix("/v1"), faults) as front:
        done, _ = ask(front.url, *HELLO, retry=RetryPolicy(attempts=3, backoff_s=0.05))
    assert done.attempts == 3 and done.text.strip()
    assert front.seen[2] - front.seen[1] >= 1.0  # Retry-After honoured, not the 0.1 s backoff
    with Fronted(messages_server.url, [(400, {})]) as front, pytest.raises(FatalModelError) as failed:
        ask(front.url, *HELLO, retry=RetryPolicy(attempts=3, backoff_s=0.05))
    assert failed.value.status == 400 and len(front.seen) == 1  # a refused request is not sent again


@pytest.mark.slow
def test_a_protocol_runs_end_to_end_with_closed_answers_asked_as_structured_output(messages_server, tmp_path, capsys):
    """COLA's judger asks for a closed choice by likelihood; the Messages API has none, so it is
    asked as structured output: the reply is read as a stance, or recorded unparsed with its text."""
    scenario = tmp_path / "cola_anthropic.yaml"
    scenario.write_text((ROOT / "scenarios" / "cola.yaml").read_text(encoding="utf-8")
                        .replace("choice: auto", "choice: likelihood").replace("max_tokens: 256", "max_tokens: 48")
                        + f"\nbackends: {{anthropic: {{base_url: '{messages_server.url}'}}}}\n", encoding="utf-8")
    out = tmp_path / "run"
    code = main([str(scenario), "--dataset", "demo-stance", "--limit", "1", "--model", "anthropic:gemma",
                 "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    results = results_of(out)
    assert len(results) == 1 and results[0]["status"] == "completed", err
    assert results[0]["prediction"] in ("favor", "against", "neutral", "unparsed")
    assert code == (4 if results[0]["prediction"] == "unparsed" else 0), err
    events = events_of(out)
    calls = [e for e in events if e["type"] == "call"]
    assert calls and all(c["model"] == "anthropic:gemma" and c["usage"]["prompt_tokens"] > 0
                         and c["usage"]["completion_tokens"] > 0 for c in calls)
    judged = closed_answers(events)
    assert judged and all(c["detail"]["method"] == "structured" and "log-probabilities" in c["detail"]["note"]
                          for c in judged)
    assert events[0]["settings"]["backends"]["anthropic_base_urls"] == [messages_server.url]


def messages_reply(path: str, body: dict) -> tuple[int, dict]:
    """Anthropic's Messages API: a verdict or scores when a schema is asked for, else prose."""
    if path != "/v1/messages":
        return 404, {"type": "error", "error": {"type": "not_found_error", "message": path}}
    schema = (body.get("output_config") or {}).get("format", {}).get("schema", {})
    properties = schema.get("properties", {})
    text = (json.dumps({"verdict": "AGREEMENT", "reason": "Both accept the criteria."}) if "verdict" in properties
            else json.dumps(SCORES) if "clarity" in properties
            else json.dumps({"decision": "NEXT_TOPIC", "message": "Next."}) if "decision" in properties
            else "Health harms, costs and civil liberties should all count.")
    return 200, {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                 "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                 "usage": {"input_tokens": 20, "cache_read_input_tokens": 5, "output_tokens": 9}}


def run_conference(tmp_path, url: str, monkeypatch, key: str = KEY) -> tuple[int, object]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    out = tmp_path / "run"
    return main([str(write_scenario(tmp_path)), "--model", "anthropic:claude-test", "--out", str(out),
                 "--quiet"]), out


def test_what_moot_sends_the_messages_api_and_reads_back(tmp_path, monkeypatch, capsys):
    with RecordingServer(messages_reply) as server:
        code, out = run_conference(tmp_path, server.url, monkeypatch)
    assert code == 0, capsys.readouterr().err
    assert {h["x-api-key"] for h in server.headers} == {KEY}
    assert {h["anthropic-version"] for h in server.headers} == {"2023-06-01"}
    bodies = [body for _, body in server.requests]
    for body in bodies:
        assert body["model"] == "claude-test" and body["temperature"] == 0.7
        assert "seed" not in body and "repeat_penalty" not in body  # no such fields in the Messages API
        assert body["system"] and body["messages"][0]["role"] == "user"
        assert all(a["role"] != b["role"] for a, b in zip(body["messages"], body["messages"][1:]))  # alternating
    schemas = {b["output_config"]["format"]["schema"]["title"]: b for b in bodies if "output_config" in b}
    assert set(schemas) == {"JudgeVerdict", "EvaluatorScores"}
    sent = json.dumps(schemas["JudgeVerdict"]["output_config"])
    assert "maxLength" not in sent and "additionalProperties" in sent  # what Anthropic's structured outputs take
    assert "maxLength" in json.dumps(JudgeVerdict.model_json_schema())  # (moot's own schema has it)
    events = read_events(out / "conference.jsonl")
    assert events[-1]["status"] == "completed"
    assert [e["verdict"] for e in events if e["type"] == "verdict"] == ["AGREEMENT"]
    assert [e["overall"] for e in events if e["type"] == "score"] == [7]
    assert all(e["usage"] == {"prompt_tokens": 25, "completion_tokens": 9} for e in events if e["type"] == "message")
    assert events[0]["settings"]["backends"]["anthropic_base_urls"] == [server.url]
    assert not [p for p in out.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


def test_a_server_refusing_structured_outputs_is_asked_without_them_from_then_on(tmp_path, monkeypatch, capsys):
    """Its prose replies are then recorded unparsed with their text, never guessed."""
    def older(path: str, body: dict) -> tuple[int, dict]:
        if "output_config" in body:
            return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": "output_config: Extra inputs are not permitted"}}
        return messages_reply(path, body)

    with RecordingServer(older) as server:
        code, out = run_conference(tmp_path, server.url, monkeypatch)
    assert code == 0, capsys.readouterr().err
    refused = [b for _, b in server.requests if "output_config" in b]
    assert len(refused) == 1  # asked once, then never again
    verdicts = [e for e in read_events(out / "conference.jsonl") if e["type"] == "verdict"]
    assert verdicts and all(v["verdict"] == "UNPARSED" and v["raw"].startswith("Health harms") for v in verdicts)


def test_no_key_and_no_server_of_ones_own_is_one_line_before_anything_runs(tmp_path, capsys):
    out = tmp_path / "run"
    code = main([str(write_scenario(tmp_path)), "--model", "anthropic:claude-test", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "ANTHROPIC_API_KEY" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_message_batch_result_is_the_reply_an_error_of_its_types_status_or_no_reply():
    """An errored request fails or is retried as its status would be directly (an invalid request
    at once, an overloaded server again); a canceled or expired one goes into the next wave; a
    refusal of structured outputs inside a batch is met as a direct one is."""
    def result(body: dict) -> str:
        return json.dumps({"custom_id": "a1", "result": body})

    message = {"type": "message", "content": [{"type": "text", "text": "Hi."}], "usage": {"input_tokens": 3}}
    assert reply_of(line_result(result({"type": "succeeded", "message": message}))) == message
    for kind, status in (("invalid_request_error", 400), ("overloaded_error", 529), ("no_such_error", 500)):
        errored = {"type": "errored", "error": {"type": "error", "error": {"type": kind, "message": "output_config"}}}
        with pytest.raises(LineFailed) as failed:
            reply_of(line_result(result(errored)))
        assert failed.value.status_code == status and "output_config" in str(failed.value)
        assert rejects_output_config(failed.value) == (status == 400)
        assert is_fatal(failed.value) == (status == 400)
    for kind in ("canceled", "expired"):
        with pytest.raises(LineLost):
            reply_of(line_result(result({"type": kind})))
    assert line_result("not json") is None and line_result(json.dumps({"result": {}})) is None
