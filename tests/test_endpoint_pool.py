"""One model served by several endpoints: each call goes to the least busy one, with a bound on
calls in flight per endpoint; the transcript records which endpoints served the run."""

from __future__ import annotations

import json
import threading
import time

import pytest

from backend_support import RecordingServer

from moot.cli import main


def slow_completion(path, body):
    time.sleep(0.02)
    content = "B" if "Choose from:" in body["messages"][-1]["content"] else "An analysis."
    return 200, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
                 "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}


class Counting:
    """Wraps a reply function: counts requests in flight and the peak."""

    def __init__(self):
        self.lock, self.now, self.peak = threading.Lock(), 0, 0

    def __call__(self, path, body):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            return slow_completion(path, body)
        finally:
            with self.lock:
                self.now -= 1


def test_calls_are_spread_over_a_pool_of_endpoints_each_bounded(tmp_path, capsys):
    rows = ["text,target,label"] + [f"post {i},topic,against" for i in range(8)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "d.yaml").write_text("path: d.csv\ncolumns: {text: text, target: target, label: label}\n")
    a_count, b_count = Counting(), Counting()
    with RecordingServer(a_count) as a, RecordingServer(b_count) as b:
        code = main(["run", "cola", "--dataset", str(tmp_path / "d.yaml"), "--model", "openai:pooled",
                     "--base-url", f"{a.url}/v1", "--base-url", f"{b.url}/v1", "--concurrency", "2",
                     "--out", str(tmp_path / "run"), "--quiet"])
        served = (len(a.requests), len(b.requests))
    assert code == 0, capsys.readouterr().err
    assert sum(served) == 8 * 7 and min(served) >= 8 * 7 // 4  # both serve, roughly evenly
    assert a_count.peak <= 2 and b_count.peak <= 2  # --concurrency bounds each endpoint
    assert a_count.peak + b_count.peak >= 3  # and the pool runs more than one endpoint's worth at once
    first = json.loads((tmp_path / "run" / "0.jsonl").read_text().splitlines()[0])
    assert first["settings"]["backends"]["openai_base_urls"] == [f"{a.url}/v1", f"{b.url}/v1"]


def batch_of(tmp_path, items: int):
    rows = ["text,target,label"] + [f"post {i},topic,against" for i in range(items)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "d.yaml").write_text("path: d.csv\ncolumns: {text: text, target: target, label: label}\n")
    return ["run", "cola", "--dataset", str(tmp_path / "d.yaml"), "--model", "openai:guarded", "--api-key",
            "sk-wrong", "--concurrency", "4", "--out", str(tmp_path / "run"), "--quiet"]


class Refusing(Counting):
    """Answers the first `answered` requests, then refuses the key with `status` (slowly, so the
    calls queued behind a refusal are still waiting when it comes)."""

    def __init__(self, status: int, answered: int = 0):
        super().__init__()
        self.status, self.answered, self.seen = status, answered, 0

    def __call__(self, path, body):
        with self.lock:
            self.seen += 1
            refuse = self.seen > self.answered
        if not refuse:
            return super().__call__(path, body)
        time.sleep(0.05)
        return self.status, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_costs_one_request_however_many_calls_wait(tmp_path, capsys, status):
    """The first call to an endpoint goes alone, so a bad key is one request, not one per slot."""
    with RecordingServer(Refusing(status)) as server:
        code = main([*batch_of(tmp_path, 8), "--base-url", f"{server.url}/v1"])
    err = capsys.readouterr().err
    assert code == 1 and "stopped early" in err, err
    assert len(server.requests) == 1  # the bound is the concurrency (4); the probe makes it one
    causes = [json.loads(line)["cause"] for path in (tmp_path / "run").glob("*.jsonl") if path.name != "results.jsonl"
              for line in path.read_text().splitlines() if json.loads(line)["type"] == "error"]
    assert causes and all(f"Error code: {status}" in cause for cause in causes), causes


def test_once_an_endpoint_refuses_the_key_no_queued_call_is_sent(tmp_path, capsys):
    """A key revoked mid-run: the calls in flight when the refusal comes are the last ones sent."""
    answered = 10
    with RecordingServer(Refusing(401, answered)) as server:
        code = main([*batch_of(tmp_path, 20), "--base-url", f"{server.url}/v1"])
    assert code == 1, capsys.readouterr().err
    assert answered < len(server.requests) <= answered + 4  # at most the other slots' calls were in flight
