"""Torture: a misbehaving OpenAI-compatible server (tests/fault_server.py) under real `moot run`
commands — a COLA dataset batch, then the same command against a healthy server.

Every fault mode must end in one clear line per failed item (or none), the right exit code, no
traceback, no secret anywhere, transcripts that load, bounded files and requests, and a run that
the same command completes afterwards with the results of an undisturbed run, sending no call
that had finished.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from backend_support import loopback_only  # noqa: F401
from fault_server import FaultServer
from moot.models.bounded import CHARS_PER_TOKEN, MAX_RESPONSE_BYTES
from torture_support import (
    COLA, SECRET, Ran, assert_clean, assert_no_secret_written, case, dataset, files_of, moot, outcome_of, read_jsonl,
    recorded_signatures, remote, unit_transcripts, write,
)

ATTEMPTS, TIMEOUT_S, MAX_TOKENS = 2, 0.5, 256  # COLA above: retry attempts/timeout; COLA's max_tokens
ITEMS = 2


def run(directory, server, *extra) -> Ran:
    return moot(directory / "cola.yaml", "--dataset", directory / "data.yaml", "--limit", ITEMS,
                "--out", directory / "run", "--quiet", "--concurrency", 4, *remote(server.url), *extra)


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory):
    """The batch against a healthy server: what every disturbed run must come to."""
    directory = tmp_path_factory.mktemp("undisturbed")
    write(directory / "cola.yaml", COLA)
    dataset(directory)
    with FaultServer("ok") as server:
        ran = run(directory, server)
    assert ran.code == 0, ran.err
    return outcome_of(directory / "run"), len(server.requests)


@pytest.fixture
def batch(tmp_path):
    write(tmp_path / "cola.yaml", COLA)
    dataset(tmp_path)
    return tmp_path


def resumes_to_undisturbed(directory, undisturbed) -> None:
    """The same command against a healthy server completes the run as if nothing had happened,
    sending none of the calls the disturbed run had finished."""
    finished = recorded_signatures(directory / "run")
    with FaultServer("ok") as healthy:
        ran = run(directory, healthy)
    assert ran.code == 0, ran.err
    assert_clean(ran, max_err_lines=0)
    assert not finished & set(healthy.signatures()), "a finished call was sent again"
    assert outcome_of(directory / "run") == undisturbed[0]


def error_causes(directory) -> list[str]:
    return [e["cause"] for path in unit_transcripts(directory / "run") for e in read_jsonl(path)
            if e["type"] == "error"]


# mode -> (exit code, a phrase every recorded cause holds, or None when the run completes)
FAILING = {
    "status-400": (1, "Error code: 400"), "status-401": (1, "Error code: 401"),
    "status-403": (1, "Error code: 403"), "status-404": (1, "Error code: 404"),
    "status-500": (1, "Error code: 500"), "status-503": (1, "Error code: 503"),
    "reset": (1, "APIConnectionError"), "hang": (1, f"no reply within {TIMEOUT_S}s"),
    "empty": (1, "not a valid chat completion"), "non-json": (1, "not a valid chat completion"),
    "no-choices": (1, "empty reply"),
    "null-content": (1, "empty reply"), "huge": (1, "ReplyTooLarge"), "huge-chunked": (1, "ReplyTooLarge"),
    "gzip-bomb": (1, "ReplyTooLarge"), "echo-key-401": (1, "[redacted]"), "echo-key-500": (1, "[redacted]"),
}
FATAL = {"status-400", "status-401", "status-403", "status-404", "echo-key-401"}


@pytest.mark.parametrize("mode", sorted(FAILING))
def test_a_failing_server_fails_cleanly_then_the_run_resumes(mode, batch, undisturbed):
    code, phrase = FAILING[mode]
    with case("fault modes"):
        started = time.monotonic()
        with FaultServer(mode) as server:
            ran = run(batch, server)
        took = time.monotonic() - started
        assert ran.code == code, ran.err
        assert_clean(ran, max_err_lines=ITEMS + 1)
        assert_no_secret_written(batch / "run")
        causes = error_causes(batch)
        assert causes and all(phrase in c for c in causes), causes
        sent = server.signatures()
        if mode in FATAL:  # not retried, and the batch stops at once
            assert len(sent) == len(set(sent)), "a call that cannot succeed was retried"
            assert "stopped early" in ran.err
            assert len(sent) < undisturbed[1]
        else:  # retried within the bound (by each unit that asks it: two items may share a prompt)
            assert ATTEMPTS <= max(sent.count(s) for s in set(sent)) <= ATTEMPTS * ITEMS
        assert took < ITEMS * ATTEMPTS * (TIMEOUT_S + 1) + 10
        assert sum(p.stat().st_size for p in files_of(batch / "run")) < 2 * MAX_RESPONSE_BYTES
        resumes_to_undisturbed(batch, undisturbed)


def test_retry_after_of_a_429_is_honoured(batch, undisturbed):
    with case("fault modes"):
        with FaultServer("status-429") as server:
            ran = run(batch, server)
        assert ran.code == 0, ran.err
        assert_clean(ran, max_err_lines=0)
        first = server.requests[0]
        again = next(r for r in server.requests[1:] if r.signature == first.signature)
        assert again.at - first.at >= 1.0  # Retry-After: 1 (the scenario's backoff is 0.05 s)
        assert outcome_of(batch / "run") == undisturbed[0]


@pytest.mark.parametrize("mode", ["flaky", "bad-usage"])
def test_a_server_that_errs_but_can_answer_gives_the_undisturbed_result(mode, batch, undisturbed):
    """flaky: each call fails once (503), then succeeds; bad-usage: nonsense token counts (counted
    as 0) around a good reply."""
    with case("fault modes"):
        with FaultServer(mode) as server:
            ran = run(batch, server)
        assert ran.code == 0, ran.err
        assert_clean(ran, max_err_lines=0)
        assert outcome_of(batch / "run") == undisturbed[0]


def test_a_server_ignoring_max_tokens_cannot_grow_transcripts_or_requests(batch):
    with case("fault modes"):
        with FaultServer("long-text") as server:  # 200 000 characters per reply, under the HTTP bound
            ran = run(batch, server)
        assert ran.code == 0, ran.err
        limit = CHARS_PER_TOKEN * MAX_TOKENS
        replies = [e for path in unit_transcripts(batch / "run") for e in read_jsonl(path) if e["type"] == "call"]
        assert replies and all(len(e["reply"]) <= limit for e in replies)
        assert any(e["finish_reason"] == "length" for e in replies)
        assert max(sum(len(m) for m in r.signature) for r in server.requests) < 4 * limit + 10_000
        assert sum(p.stat().st_size for p in files_of(batch / "run")) < 1_000_000


def test_escape_sequences_from_a_model_never_reach_the_terminal(batch):
    with case("fault modes"):
        with FaultServer("escapes") as server:
            ran = moot(batch / "cola.yaml", "--input", "text=Cut taxes now!", "--input", "target=taxes",
                       "--out", batch / "run", *remote(server.url))  # live output: every turn printed
        assert ran.code == 0, ran.err
        assert "red Reply" in ran.out  # the text is kept, its escape sequences are not
        assert_clean(ran)
        for argv in (["replay", batch / "run"], ["export", batch / "run", "--format", "md", "--out", "-"]):
            shown = moot(*argv)
            assert shown.code == 0, shown.err
            assert "\x1b" not in shown.out and "\x07" not in shown.out


def test_a_secret_echoed_by_a_server_is_redacted_everywhere(batch):
    with case("fault modes"):
        with FaultServer("echo-key-500") as server:
            ran = run(batch, server)
        assert ran.code == 1
        assert SECRET in server.requests[0].authorization  # the server did see it, and echoed it
        assert "[redacted]" in ran.err
        assert_clean(ran)
        assert_no_secret_written(batch / "run")
        for argv in (["replay", batch / "run"], ["report", batch / "run", "--out", batch / "report"]):
            shown = moot(*argv)
            assert SECRET not in shown.out + shown.err
        assert_no_secret_written(batch)


@pytest.mark.parametrize("size, fails", [(3 * 1024 * 1024, True), (200_000, False)])
def test_an_ollama_server_ignoring_num_predict_is_bounded_too(size, fails):
    """The same bounds on the Ollama client: a body over the HTTP limit fails the call, a long
    text under it is cut to what num_predict allows."""
    from autogen_core.models import UserMessage

    from backend_support import RecordingServer
    from moot.models.bounded import ReplyTooLarge
    from moot.models.factory import build_client
    from moot.models.backends.ollama.provider import OllamaBackend
    from moot.models.provider import BackendOptions

    def chat(path, body):
        return 200, {"model": body["model"], "created_at": "2025-01-01T00:00:00Z", "done": True,
                     "message": {"role": "assistant", "content": "x" * size}, "done_reason": "stop",
                     "prompt_eval_count": 3, "eval_count": 5}

    with case("fault modes"), RecordingServer(chat) as server:
        client = build_client("ollama:llama3", {"max_tokens": MAX_TOKENS}, BackendOptions({"ollama": OllamaBackend(host=server.url)}))
        ask = client.create([UserMessage(content="hi", source="user")])
        if fails:
            with pytest.raises(ReplyTooLarge):
                asyncio.run(ask)
        else:
            result = asyncio.run(ask)
            assert len(result.content) == CHARS_PER_TOKEN * MAX_TOKENS and result.finish_reason == "length"
