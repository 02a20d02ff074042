"""The OpenAI backend against a real OpenAI-compatible server (llama-cpp-python's, serving the
embedded Gemma GGUF on loopback), plus its failure handling: unreachable endpoint, HTTP 500.

llama_cpp.server 0.3.36 rejects OpenAI's `response_format: json_schema` (HTTP 500, validation
error) and takes `{"type": "json_object", "schema": ...}` instead; moot's OpenAI client sends
the standard form and falls back to that one (moot/models/backends/openai/client.py).
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager

import pytest
from autogen_core.models import UserMessage

from backend_support import (
    CORE_EVENTS, RecordingServer, assert_real_messages, assert_structured_ok, free_port,
    loopback_only, of_type, read_events, write_scenario,  # noqa: F401
)
from moot.cli import main
from moot.models.factory import build_client
from moot.models.backends.openai.provider import OpenAIBackend
from moot.models.provider import BackendOptions
from moot.models.backends.local.client import default_model_path
from moot.models.structured import JSON_OBJECT_SCHEMA, JSON_SCHEMA, reply_budget, response_format
from moot.models.replies import parse_reply
from moot.protocols.conference.verdicts import JudgeVerdict

SECRET = "sk-moot-test-7c1e9d2f0b"  # must never reach a transcript or the console
# How llama_cpp.server 0.3.36 answers a `json_schema` response_format (seen in the slow test below).
LLAMA_CPP_REJECTION = ("1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', "
                       "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}")


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    """llama_cpp.server on a free loopback port, serving the embedded model; killed at the end."""
    port = free_port()
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", default_model_path(),
           "--host", "127.0.0.1", "--port", str(port), "--chat_format", "gemma", "--n_ctx", "4096"]
    with open(log, "wb") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_until_up(proc, f"{url}/models", log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_until_up(proc: subprocess.Popen, url: str, log, timeout: float = 180) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with opener.open(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"llama_cpp.server not up within {timeout}s:\n{log.read_text()[-3000:]}")


def _run(scenario, out, base_url, *extra) -> int:
    return main([str(scenario), "--model", "openai:gemma", "--base-url", base_url, "--api-key", SECRET,
                 "--out", str(out), "--quiet", *extra])


def everything_written(folder) -> str:
    return "".join(p.read_text(errors="replace") for p in folder.iterdir() if p.is_file())


def _completion(content: str) -> dict:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "gemma",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}}


def _openai_like(path, body):
    return 200, _completion(json.dumps({"verdict": "MORE_DEBATE", "reason": "cost data is still open"}))


def _llama_cpp_like(path, body):
    if body["response_format"]["type"] == "json_schema":
        return 500, {"error": {"message": LLAMA_CPP_REJECTION, "type": "internal_server_error"}}
    return _openai_like(path, body)


@pytest.mark.parametrize("reply, sent, dialect", [
    (_openai_like, ["json_schema", "json_schema"], JSON_SCHEMA),
    (_llama_cpp_like, ["json_schema", "json_object", "json_object"], JSON_OBJECT_SCHEMA),
])
def test_structured_calls_send_json_schema_and_fall_back_only_when_rejected(reply, sent, dialect):
    """OpenAI and most compatible servers get the standard json_schema form; a server that
    only takes json_object (llama_cpp.server) is answered in its dialect, learned once."""

    async def ask_twice(client):
        ask = [UserMessage(content="Did they agree?", source="user")]
        return [await client.create(ask, json_output=JudgeVerdict) for _ in range(2)]

    with RecordingServer(reply) as server:
        client = build_client("openai:gemma", {"temperature": 0.7, "max_tokens": 96, "seed": 1},
                              BackendOptions({"openai": OpenAIBackend(base_url=f"{server.url}/v1")}, SECRET))
        results = asyncio.run(ask_twice(client))
    bodies = [body for _, body in server.requests]
    assert [b["response_format"]["type"] for b in bodies] == sent
    assert bodies[0]["response_format"] == response_format(JudgeVerdict)  # strict schema, as OpenAI's SDK sends
    assert bodies[-1]["response_format"] == response_format(JudgeVerdict, dialect)
    assert client.dialect == dialect
    assert all(b["max_tokens"] == reply_budget(JudgeVerdict) for b in bodies)  # room to finish
    assert [parse_reply(JudgeVerdict, r.content).value.verdict for r in results] == ["MORE_DEBATE"] * 2


@pytest.mark.slow
def test_server_takes_json_object_schema_not_json_schema(server_url):
    """What llama_cpp.server 0.3.36 does with each response_format, and that our client copes."""
    import openai

    raw = openai.OpenAI(base_url=server_url, api_key="none", max_retries=0)
    ask = [{"role": "user", "content": 'Did they agree? Answer as JSON {"verdict": ..., "reason": ...}'}]
    with pytest.raises(openai.InternalServerError, match="json_object"):
        raw.chat.completions.create(model="gemma", messages=ask, max_tokens=32,
                                    response_format=response_format(JudgeVerdict))
    reply = raw.chat.completions.create(model="gemma", messages=ask, max_tokens=reply_budget(JudgeVerdict),
                                        seed=1, response_format=response_format(JudgeVerdict, JSON_OBJECT_SCHEMA))
    assert parse_reply(JudgeVerdict, reply.choices[0].message.content).value is not None

    client = build_client("openai:gemma", {"temperature": 0.7, "max_tokens": 16, "seed": 3},
                          BackendOptions({"openai": OpenAIBackend(base_url=server_url)}, SECRET))
    result = asyncio.run(client.create([UserMessage(content=ask[0]["content"], source="user")],
                                       json_output=JudgeVerdict))
    assert client.dialect == JSON_OBJECT_SCHEMA  # learned from the server's rejection
    assert parse_reply(JudgeVerdict, result.content).value is not None, result.content
    assert result.usage.completion_tokens > 0


def test_a_plain_request_is_sent_and_refused_as_the_sdk_would_send_and_refuse_it():
    """moot sends a chat call through the SDK's HTTP client without its request layer: the server
    sees what the SDK's own `post` sends (path, query credentials, JSON body, headers), and a
    refusal is the SDK's error (class, status, message)."""
    import openai

    def refuse_second(path, body):
        if body.get("refuse"):
            return 401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}
        return 200, _completion("fine")

    with RecordingServer(refuse_second) as server:
        client = build_client("openai:gemma", {"temperature": 0.5, "max_tokens": 8},
                              BackendOptions({"openai": OpenAIBackend(base_url=f"http://u:pw@127.0.0.1:{server.url.rsplit(':', 1)[1]}/v1?tag=x")}, SECRET))
        body = {"messages": [{"role": "user", "content": "Héllo"}], "temperature": 0.5}

        async def both(extra):
            ours = None
            try:
                ours = await client._post("/chat/completions", {**body, **extra})
            except openai.APIStatusError as exc:
                ours = exc
            theirs = None
            try:
                theirs = (await client.sdk.post("/chat/completions", body={"model": "gemma", **body, **extra},
                                                cast_to=dict))
            except openai.APIStatusError as exc:
                theirs = exc
            return ours, theirs

        async def all_of_it():
            try:
                return await both({}), await both({"refuse": True})
            finally:
                await client.close()

        answered, refused = asyncio.run(all_of_it())
    (path, sent), (sdk_path, sdk_sent) = server.requests[:2]
    assert path == sdk_path == "/v1/chat/completions?tag=x" and sent == sdk_sent
    ours, theirs = ({k.lower(): v for k, v in h.items()} for h in server.headers[:2])
    assert ours == theirs and ours["authorization"].startswith("Basic ")  # the URL's user info, as the endpoint expects
    assert answered[0] == answered[1]
    assert type(refused[0]) is type(refused[1]) is openai.AuthenticationError
    assert str(refused[0]) == str(refused[1]) and refused[0].status_code == 401
    assert refused[0].body == refused[1].body


@pytest.mark.slow
def test_conference_through_openai_compatible_server(tmp_path, server_url, capsys, record_property):
    out = tmp_path / "run"
    code = _run(write_scenario(tmp_path), out, server_url)

    printed = capsys.readouterr()
    assert code == 0, printed.err
    events = read_events(out / "conference.jsonl")
    assert CORE_EVENTS <= {e["type"] for e in events}
    assert set(events[0]["models"].values()) == {"openai:gemma"}
    assert events[0]["settings"]["backends"]["openai_base_urls"] == [server_url]
    assert events[-1]["status"] == "completed"
    assert_real_messages(events)
    labels = assert_structured_ok(events)
    record_property("verdicts", labels)
    print(f"judge verdicts through llama_cpp.server: {labels}")
    assert SECRET not in everything_written(out) and SECRET not in printed.out + printed.err


def test_an_unreachable_server_is_found_before_anything_runs(tmp_path, capsys):
    out = tmp_path / "run"
    closed = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    assert _run(write_scenario(tmp_path), out, closed) == 2
    err = capsys.readouterr().err.strip()
    assert time.monotonic() - started < 10 and err.count("\n") == 0
    assert f"OpenAI-compatible endpoint {closed} is unreachable" in err
    assert not out.exists()  # nothing half-written


@pytest.mark.slow
def test_a_server_failing_mid_run_is_saved_as_failed_then_resumed_elsewhere(tmp_path, server_url, capsys):
    scenario = write_scenario(tmp_path, attempts=3)
    out = tmp_path / "run"

    def unavailable(path, body):
        return 503, {"error": {"message": "overloaded", "type": "server_error"}}

    started = time.monotonic()
    with RecordingServer(unavailable) as down:
        assert _run(scenario, out, f"{down.url}/v1") == 1
    assert time.monotonic() - started < 60  # bounded retries, small backoff
    events = read_events(out / "conference.jsonl")
    errors = of_type(events, "error")
    assert len(errors) == 1
    error = errors[0]
    assert error["stage"] == "model_call" and error["speaker"] == "Moderator"
    assert error["attempts"] == 3
    assert "503" in error["cause"], error["cause"]
    assert events[-1]["type"] == "run_finished" and events[-1]["status"] == "failed"
    assert not of_type(events, "message")

    code = _run(scenario, out, server_url)  # the same command against a live server continues it
    printed = capsys.readouterr()
    assert code == 0, printed.err
    events = read_events(out / "conference.jsonl")
    assert of_type(events, "run_resumed")
    assert events[-1]["type"] == "run_finished" and events[-1]["status"] == "completed"
    assert_real_messages(events)
    assert_structured_ok(events)
    assert SECRET not in everything_written(out) and SECRET not in printed.out + printed.err


def test_http_500_is_retried_then_recorded(tmp_path, capsys):
    def reply(path, body):
        return 500, {"error": {"message": "upstream exploded", "type": "server_error"}}

    out = tmp_path / "run"
    with RecordingServer(reply) as server:
        code = _run(write_scenario(tmp_path, attempts=2), out, f"{server.url}/v1")
    printed = capsys.readouterr()

    assert code == 1
    assert "conference failed: error: InternalServerError" in printed.err
    assert [path for path, _ in server.requests] == ["/v1/chat/completions"] * 2  # ours, no SDK retries
    body = server.requests[0][1]
    assert body["model"] == "gemma" and body["max_tokens"] == 96 and body["seed"] == 42
    error = of_type(read_events(out / "conference.jsonl"), "error")[0]
    assert "500" in error["cause"] and error["attempts"] == 2, error
    assert SECRET not in everything_written(out) and SECRET not in printed.out + printed.err


async def _measured(client, messages, request):
    from moot.models.requests import REQUEST_ARG

    return await client.create(messages, extra_create_args={REQUEST_ARG: request.as_dict()})


@pytest.mark.slow
def test_likelihood_choices_and_scores_through_the_server_equal_the_embedded_model_s(server_url):
    """llama_cpp.server's first-token top_logprobs (its default logits_all=True model) against the
    same GGUF scored in-process: raw-text prompts (/completions), and the Gemma chat template
    (the server's --chat_format gemma, the local client told the model is an instruction model)."""
    from moot.models.backends.local.client import LocalChatCompletionClient
    from moot.models.backends.local.process import LocalConfig
    from moot.models.requests import Choose, Score

    server = build_client("openai:gemma", {"max_tokens": 8}, BackendOptions({"openai": OpenAIBackend(base_url=server_url)}))
    config = LocalConfig(default_model_path(), n_ctx=2048, n_threads=1)
    local = LocalChatCompletionClient(config, {"max_tokens": 8})
    chat = LocalChatCompletionClient(config, {"max_tokens": 8}, kind="instruct")
    question = [UserMessage(content="Question: Is the sky blue on a clear day? Please answer Yes or No.",
                            source="user")]
    rate = [UserMessage(content="Rate how clear this sentence is: 'The sky is blue.'", source="user")]
    # The base model does not answer in chat form: options it does put among its top 20 first tokens.
    bigger = [UserMessage(content="Which is bigger, A: an elephant or B: a mouse? Answer A or B.", source="user")]
    cases = [(question, Choose(options=("Yes", "No"), document=True), local),
             (rate, Score(prefix="Clarity (1-10):", document=True), local),  # " 7" is " ", "7": extended twice
             (bigger, Choose(options=("A", "The", "This")), chat)]  # the reply's first token

    async def both():
        return [(request, await _measured(server, m, request), await _measured(in_process, m, request))
                for m, request, in_process in cases]

    for request, remote, own in asyncio.run(both()):
        assert remote.detail["method"] == "top_logprobs" and own.detail["method"] == "likelihood"
        assert remote.detail["bounded"] == [], request
        for option, p in own.detail["probabilities"].items():
            assert remote.detail["probabilities"][option] == pytest.approx(p, abs=0.05), (request, option)
        if isinstance(request, Score):
            assert remote.detail["expected"] == pytest.approx(own.detail["expected"], abs=0.3)
        print(f"{type(request).__name__} document={request.document}: server {remote.detail['probabilities']} "
              f"in-process {own.detail['probabilities']}")


@pytest.mark.slow
def test_a_document_continuation_through_the_server_is_cut_to_a_sentence(server_url):
    from moot.models.requests import Continue

    server = build_client("openai:gemma", {"max_tokens": 24, "temperature": 0.7, "seed": 3},
                          BackendOptions({"openai": OpenAIBackend(base_url=server_url)}))
    doc = [UserMessage(content="Moderator: What should count as a good outcome of a drug policy?\n\nDr. Weber:",
                       source="document")]
    result = asyncio.run(_measured(server, doc, Continue(document=True, stop=("\n\n", "\nModerator:"),
                                                          min_tokens=20)))
    assert result.detail["method"] == "completion" and "not applied by a server" in result.detail["note"]
    assert result.content and result.content == result.content.strip()
    if result.detail.get("cut"):
        assert result.detail["uncut"].startswith(result.content) and result.content[-1] in ".!?\"')]"


@pytest.mark.slow
def test_replies_stream_from_the_server_through_the_engine(server_url):
    """A chat reply and a document continuation arrive chunk by chunk (server-sent events) through
    the engine's `on_text`; the call's result is the whole reply (a continuation: cut)."""
    from moot.models.engine import ModelEngine, RoleModel
    from moot.models.requests import Continue

    engine = ModelEngine(BackendOptions({"openai": OpenAIBackend(base_url=server_url)}))
    model = RoleModel("openai:gemma", {"max_tokens": 24, "temperature": 0.7, "seed": 3})
    doc = [UserMessage(content="Moderator: What should count as a good outcome of a drug policy?\n\nDr. Weber:",
                       source="document")]

    async def go():
        chunks: dict[str, list[str]] = {"chat": [], "continue": []}
        chat = await engine.ask(model, [UserMessage(content="Say hello.", source="user")],
                                on_text=chunks["chat"].append)
        turn = await engine.ask(model, doc, request=Continue(document=True, stop=("\n\n",)),
                                on_text=chunks["continue"].append)
        await engine.close()
        return chat, turn, chunks

    chat, turn, chunks = asyncio.run(go())
    assert len(chunks["chat"]) > 1 and "".join(chunks["chat"]) == chat.text
    assert len(chunks["continue"]) > 1
    assert "".join(chunks["continue"]).strip() == (turn.detail.get("uncut") or turn.text)


def _reset_once_asked(conn: socket.socket) -> None:
    """Read the whole request, then reset the connection (SO_LINGER 0: the close sends a RST)."""
    conn.settimeout(5)
    data = b""
    while not _whole_request(data):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def _whole_request(data: bytes) -> bool:
    head, ended, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    return bool(ended) and len(body) >= length


def _never_answer(conn: socket.socket) -> None:
    """Keep the connection open and say nothing (closed when the listener closes)."""


@contextmanager
def _loopback_listener(answer):
    """A TCP socket on a free loopback port handing every connection it accepts to `answer`
    (on a thread); its base URL. Connections still open are closed at the end."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    stop, held = threading.Event(), []

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            held.append(conn)
            answer(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        thread.join(5)
        listener.close()
        for conn in held:
            conn.close()


def _root(exc: BaseException) -> BaseException:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


@pytest.mark.parametrize("answer, wait, named, root_type", [
    (_reset_once_asked, 5.0, "APIConnectionError", ConnectionResetError),  # the reset comes at once
    (_never_answer, 0.3, "APITimeoutError", TimeoutError),
], ids=["reset", "timeout"])
def test_a_timeout_caused_by_a_connection_error_is_named_a_connection_error(answer, wait, named, root_type):
    """The SDK's aiohttp transport reports a connection reset as a connect timeout (openai 3.57:
    a real call to a loopback socket that resets the connection once the request is in raises
    APITimeoutError, caused through httpx and aiohttp by a ConnectionResetError). moot names it a
    connection error caused by that root, for the SDK's own exception as for moot's call; a real
    timeout (a socket that never answers, a 0.3 s client timeout) stays a timeout. The SDK builds
    its exceptions itself: the test does not depend on how one version constructs them."""
    import openai
    from moot.models.backends.openai.client import connection_errors_named

    async def the_sdk_s_then_moot_s(url):
        client = build_client("openai:gemma", {"max_tokens": 8}, BackendOptions({"openai": OpenAIBackend(base_url=url)}, SECRET))
        client.http.timeout = wait  # how long moot's own requests wait (the HTTP client's public setting)
        try:
            with pytest.raises(openai.APIConnectionError) as sdk:  # APITimeoutError is one
                await client.sdk.chat.completions.create(model="gemma", messages=[{"role": "user", "content": "Hi"}],
                                                         timeout=wait)
            with pytest.raises(openai.APIConnectionError) as ours:
                await client.create([UserMessage(content="Hi", source="user")])
            return sdk.value, ours.value
        finally:
            await client.close()

    with _loopback_listener(answer) as url:
        sdk_error, ours = asyncio.run(the_sdk_s_then_moot_s(url))
    root = _root(sdk_error)
    assert isinstance(root, root_type), repr(root)
    assert isinstance(_root(ours), root_type), repr(_root(ours))

    with pytest.raises(openai.APIConnectionError) as raised:
        with connection_errors_named():
            raise sdk_error
    assert type(raised.value).__name__ == type(ours).__name__ == named
    if raised.value is sdk_error:  # passed on unchanged: a real timeout (or a connection error already)
        assert _root(raised.value) is root
    else:  # a timeout renamed: caused by its root, the layers between dropped
        assert type(sdk_error).__name__ == "APITimeoutError" and raised.value.__cause__ is root
        assert ours.__cause__ is _root(ours)


def test_a_streamed_closed_answer_is_read_from_the_chunk_with_log_probabilities():
    """A closed answer is asked streamed (llama_cpp.server scores an unstreamed one's whole context):
    its reply is the first chunk whose choice carries log-probabilities, with the usage a last
    chunk reports; keep-alive comments, [DONE] and lines that are no JSON object are skipped."""
    from moot.models.backends.openai.client import assembled, first_top_logprobs

    tops = {" Yes": -0.2, " No": -1.8}
    events = "\n".join([": keep-alive", "", 'data: {"choices": [{"text": "", "logprobs": null}]}', "",
                        f'data: {json.dumps({"choices": [{"text": " Yes", "logprobs": {"top_logprobs": [tops]}}]})}',
                        "", 'data: {"choices": [{"text": " more", "logprobs": {"top_logprobs": [{" x": -0.1}]}}]}',
                        "data: not json", 'data: {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 1}}',
                        "data: [DONE]", ""])
    reply = assembled(events)
    assert first_top_logprobs(reply, document=True) == tops
    assert reply["usage"] == {"prompt_tokens": 7, "completion_tokens": 1}
    assert assembled("data: [DONE]\n") == {"choices": []}
