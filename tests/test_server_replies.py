"""What the servers researchers run send back, read as each documents it: a closed answer's top
log-probabilities in the legacy completions shape (OpenAI, vLLM, llama-cpp-python's server) and in
the chat shape (chat replies everywhere; llama.cpp's llama-server for completions too), and a
kept-alive connection the server closes after a streamed reply (llama-server does, every time)."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from moot.models.factory import build_client
from moot.models.backends.openai.provider import OpenAIBackend
from moot.models.provider import BackendOptions
from moot.models.backends.openai.client import assembled, first_top_logprobs
from moot.models.server_likelihood import NoLogprobs

LEGACY = {"choices": [{"text": " Yes", "logprobs": {"tokens": [" Yes"], "token_logprobs": [-0.2],
                                                   "top_logprobs": [{" Yes": -0.2, " No": -1.8}]}}]}
# llama-server b11434, /v1/completions with "logprobs": 2 (as it answered here)
CONTENT = {"choices": [{"text": " Yes", "index": 0, "logprobs": {"content": [
    {"id": 8438, "token": " Yes", "bytes": [32, 89, 101, 115], "logprob": -0.2,
     "top_logprobs": [{"id": 8438, "token": " Yes", "bytes": [32, 89, 101, 115], "logprob": -0.2},
                      {"id": 2301, "token": " No", "bytes": [32, 78, 111], "logprob": -1.8}]}]}}]}
CHAT = {"choices": [{"message": {"content": "Yes"}, "logprobs": {"content": [
    {"token": "Yes", "logprob": -0.2, "top_logprobs": [{"token": "Yes", "logprob": -0.2},
                                                       {"token": "No", "logprob": -1.8}]}]}}]}


@pytest.mark.parametrize("reply, document, expected", [
    (LEGACY, True, {" Yes": -0.2, " No": -1.8}),
    (CONTENT, True, {" Yes": -0.2, " No": -1.8}),
    (CHAT, False, {"Yes": -0.2, "No": -1.8}),
])
def test_a_first_position_is_read_in_either_shape(reply, document, expected):
    assert first_top_logprobs(reply, document) == expected


@pytest.mark.parametrize("logprobs", [{"content": [{"top_logprobs": [{"token": " Yes", "logprob": "high"}]}]},
                                      {"content": [{"top_logprobs": [{"logprob": -0.1}]}]},
                                      {"content": "none"}])
def test_an_unreadable_chat_shape_is_no_logprobs(logprobs):
    with pytest.raises(NoLogprobs):
        first_top_logprobs({"choices": [{"logprobs": logprobs}]}, document=True)


def test_a_streamed_llama_server_answer_is_assembled_from_its_first_chunk():
    chunks = [{"choices": [CONTENT["choices"][0] | {"finish_reason": None}]},
              {"choices": [{"text": "", "index": 0, "logprobs": None, "finish_reason": "length"}],
               "usage": {"completion_tokens": 1, "prompt_tokens": 10, "total_tokens": 11}}]
    events = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    reply = assembled(events)
    assert first_top_logprobs(reply, document=True) == {" Yes": -0.2, " No": -1.8}
    assert reply["usage"]["prompt_tokens"] == 10


class ClosesAfterStreaming(BaseHTTPRequestHandler):
    """Answers every request with a streamed reply said to be kept alive, then closes the
    connection, as llama-server does."""

    protocol_version = "HTTP/1.1"
    served: list[str] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.served.append(self.path)
        body = (f"data: {json.dumps({'choices': [CONTENT['choices'][0]]})}\n\ndata: [DONE]\n\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Keep-Alive", "timeout=5, max=100")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


def test_a_connection_closed_after_a_streamed_reply_is_not_a_failed_call():
    server = ThreadingHTTPServer(("127.0.0.1", 0), ClosesAfterStreaming)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    client = build_client("openai:m", {"max_tokens": 8}, BackendOptions({"openai": OpenAIBackend(base_url=url, kind="base")}))

    async def asked_thrice():
        found = [await client._top_logprobs([], f"Question {n}? Answer:", True, {}) for n in range(3)]
        await client.close()
        return found

    try:
        replies = asyncio.run(asked_thrice())
    finally:
        server.shutdown()
        server.server_close()
    assert [first_top_logprobs(r, True) for r in replies] == [{" Yes": -0.2, " No": -1.8}] * 3
    assert len(ClosesAfterStreaming.served) >= 3


def completion(text: str, tokens: int) -> dict:
    return {"choices": [{"text": text, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": tokens}}


@pytest.mark.parametrize("refuses", [False, True])
def test_a_turn_ended_before_it_began_is_begun_again_without_a_newline_first(refuses):
    """A base model behind a server may write the blank line first (no processors there): the turn
    is begun again with newlines banned for its first token, then goes on as asked. A server that
    refuses the ban by text keeps the empty reply, which fails as any empty reply."""
    from autogen_core.models import UserMessage
    from backend_support import RecordingServer

    from moot.models.requests import REQUEST_ARG, Continue

    def reply(path: str, body: dict):
        if "logit_bias" in body:
            return (400, {"error": {"message": "logit_bias keys must be token ids"}}) if refuses \
                else (200, completion(" I", 1))
        return 200, completion(" think we agree." if body["prompt"].endswith(" I") else "", 4)

    request = Continue(document=True, stop=("\n\n",), min_tokens=8, ban_first=("Bob",))
    with RecordingServer(reply) as server:
        client = build_client("openai:m", {"max_tokens": 48}, BackendOptions(
            {"openai": OpenAIBackend(base_url=server.url + "/v1", kind="base")}))

        async def ask():
            try:
                return await client.create([UserMessage(content="Alice: Do we agree?", source="document")],
                                           extra_create_args={REQUEST_ARG: request.as_dict()})
            finally:
                await client.close()

        result = asyncio.run(ask())
    bodies = [body for _, body in server.requests]
    assert bodies[1]["logit_bias"] == {"\n": False, "\n\n": False, "\n\n\n": False} and bodies[1]["max_tokens"] == 1
    if refuses:
        assert result.content == "" and len(bodies) == 2
    else:
        assert result.content == "I think we agree." and bodies[2]["max_tokens"] == 47
        assert result.usage.prompt_tokens == 20 and result.usage.completion_tokens == 5
