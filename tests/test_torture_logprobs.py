"""Torture: logprob answers handled one way. An OpenAI-compatible server asked for the judger's
option by its top log-probabilities answers with none, null, NaN, a string, a positive number or a
malformed list: every one takes the same documented path — the choice is asked again for
structured output, the call says why, the item is decided (never failed, never unparsed), and the
server is not asked for log-probabilities again. Readable ones decide by likelihood.
"""

from __future__ import annotations

import json

import pytest

from backend_support import loopback_only  # noqa: F401
from fault_server import FaultServer
from moot.engine.folder import read_results
from torture_support import assert_clean, case, dataset, moot, read_jsonl, remote, unit_transcripts, write


def top(*pairs) -> str:
    """A chat choice's `logprobs` with these (token, logprob) first-position alternatives (raw JSON)."""
    entries = ", ".join(f'{{"token": {json.dumps(t)}, "logprob": {lp}}}' for t, lp in pairs)
    return f'{{"content": [{{"token": "A", "logprob": -0.1, "top_logprobs": [{entries}]}}]}}'


READABLE = top(("A", -0.1), ("B", -2.5), ("C", -4.0))
UNREADABLE = {
    "absent": None,  # the server ignores the request
    "null": "null",
    "empty content": '{"content": []}',
    "NaN": top(("A", "NaN"), ("B", -2.5), ("C", -4.0)),
    "null value": top(("A", "null"), ("B", -2.5), ("C", -4.0)),
    "a string": top(("A", '"-0.1"'), ("B", -2.5), ("C", -4.0)),
    "a word": top(("A", '"high"'), ("B", -2.5), ("C", -4.0)),
    "a positive number": top(("A", 0.7), ("B", -2.5), ("C", -4.0)),
    "no logprob key": '{"content": [{"token": "A", "top_logprobs": [{"token": "A"}]}]}',
    "a list of numbers": '{"content": [{"token": "A", "logprob": -0.1, "top_logprobs": [5, 6]}]}',
    "a mapping for the list": '{"content": [{"token": "A", "logprob": -0.1, "top_logprobs": {"A": -0.1}}]}',
}


def run(tmp_path, server):
    write(tmp_path / "cola.yaml", "protocol: cola\nmodels: {default: 'openai:fault'}\nchoice: likelihood\n"
                                  "retry: {attempts: 2, backoff_s: 0.05, timeout_s: 5}\n")
    dataset(tmp_path)
    return moot(tmp_path / "cola.yaml", "--dataset", tmp_path / "data.yaml", "--limit", "3", "--out",
                tmp_path / "run", "--quiet", "--concurrency", "1", *remote(server.url))


def choice_calls(folder) -> list[dict]:
    return [e for path in unit_transcripts(folder) for e in read_jsonl(path)
            if e["type"] == "call" and e.get("kind") == "choice"]


@pytest.mark.parametrize("answer", sorted(UNREADABLE))
def test_every_unreadable_logprob_answer_falls_back_to_structured_output_the_same_way(answer, tmp_path):
    with FaultServer("ok", logprobs=UNREADABLE[answer]) as server, case("fault modes", "logprobs"):
        ran = run(tmp_path, server)
        assert ran.code == 0, ran.err
        assert_clean(ran, max_err_lines=0)
        rows = read_results(tmp_path / "run")
        assert len(rows) == 3 and all(r["status"] == "completed" and r["prediction"] != "unparsed"
                                      for r in rows.values()), rows
        calls = choice_calls(tmp_path / "run")
        assert calls and all(c["detail"]["method"] == "structured" for c in calls), calls
        notes = {c["detail"]["note"] for c in calls}
        assert all(n.startswith("choice not available from this backend (") and
                   n.endswith("); asked for structured output") for n in notes), notes
        assert sum(r.logprobs for r in server.requests) == 1  # asked once, then never again


def test_readable_logprobs_decide_by_likelihood(tmp_path):
    with FaultServer("ok", logprobs=READABLE) as server, case("fault modes", "logprobs"):
        ran = run(tmp_path, server)
        assert ran.code == 0, ran.err
        calls = choice_calls(tmp_path / "run")
        assert calls and all(c["detail"]["method"] == "top_logprobs" for c in calls), calls
        assert not any(r.response_format for r in server.requests if r.signature in
                       {tuple(m["content"] for m in c["messages"]) for c in calls})
