"""A fault-injecting OpenAI-compatible server on loopback, for the torture tests.

`FaultServer(mode)` answers `POST /v1/chat/completions` like a small deterministic model (the reply
depends only on the request: structured requests get an object valid for their JSON schema, plain
ones a short text) unless its `mode` says to misbehave. `mode` may be changed between runs (a run
saved as failed is then resumed against a healthy server; `retry_after`: what a 429 asks). Every
request is recorded with its messages, its path, its Authorization header and when it arrived.
`delay` slows every reply (kill loops). `logprobs`: what a request for log-probabilities gets as its
choice's `logprobs` (raw JSON, so NaN can be sent); None: they are ignored, as many servers do.

`rate`: a rate limit of that many requests per second (a token bucket holding `burst` requests,
default one second's worth; 1: requests spaced 1/rate apart, as nginx's `limit_req` without burst):
above it a request gets HTTP 429 with `Retry-After: retry_after` (counted in `refused`), as a
provider's rate limit does. `upstream`: the base URL of a real OpenAI-compatible server (a
llama-server) that answers every request let through, in place of the scripted reply.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import socket
import struct
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

# mode -> what the server does (the torture tests name their expectations per mode)
MODES = ("ok", "status-400", "status-401", "status-403", "status-404", "status-429", "status-500",
         "status-503", "reset", "hang", "empty", "non-json", "no-choices", "bad-usage", "null-content",
         "huge", "huge-chunked", "gzip-bomb", "long-text", "flaky", "echo-key-401", "echo-key-500", "escapes",
         "once-503")
HUGE_BYTES = 3 * 1024 * 1024
LONG_TEXT_CHARS = 200_000


@dataclass
class Request:
    at: float
    model: str
    messages: list[dict]
    authorization: str
    response_format: Optional[dict] = None
    path: str = ""
    logprobs: bool = False  # it asked for log-probabilities

    @property
    def signature(self) -> tuple[str, ...]:
        """What identifies a call: the texts of its messages."""
        return tuple(m.get("content") or "" for m in self.messages)


class QuietServer(ThreadingHTTPServer):
    """Clients that hang up (timeouts, kills, connection resets) are expected here, not errors."""

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass


@dataclass
class FaultServer:
    mode: str = "ok"
    delay: float = 0.0
    retry_after: str = "1"  # what a 429 asks
    logprobs: Optional[str] = None  # the JSON text of a choice's "logprobs" when a request asks for them
    requests: list[Request] = field(default_factory=list)
    rate: Optional[float] = None  # requests per second let through; above it: 429
    burst: Optional[float] = None  # the bucket's size (default: `rate`)
    upstream: Optional[str] = None  # a real server answering the requests let through
    refused: int = 0  # requests answered 429 by the rate limit

    def __post_init__(self) -> None:
        assert self.mode in MODES, self.mode
        self._tokens, self._filled = self.rate or 0.0, time.monotonic()
        self._release = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size)
                if not server.let_through():
                    return send(self, 429, {"error": {"message": "rate limit", "type": "rate_limit"}},
                                {"Retry-After": server.retry_after})
                body = json.loads(raw or b"{}")
                request = Request(time.monotonic(), body.get("model", ""), body.get("messages", []),
                                  self.headers.get("Authorization", ""), body.get("response_format"), self.path,
                                  bool(body.get("logprobs")))
                with server._lock:
                    server.requests.append(request)  # a forwarded one too: the requests let through
                    number = len(server.requests)
                if server.upstream:
                    return forward(self, server.upstream, raw)
                server.answer(self, request, number)

            do_GET = do_POST

            def log_message(self, *args) -> None:
                pass

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "FaultServer":
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    # --- answers ------------------------------------------------------------------------------
    def let_through(self) -> bool:
        """Whether the rate limit lets a request through now (a token bucket of one second)."""
        if self.rate is None:
            return True
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst or self.rate, self._tokens + (now - self._filled) * self.rate)
            self._filled = now
            if self._tokens >= 1:
                self._tokens -= 1
                return True
            self.refused += 1
            return False

    def answer(self, h: BaseHTTPRequestHandler, request: Request, number: int) -> None:
        if self.delay:
            time.sleep(self.delay)
        mode = self.mode
        if mode == "flaky":  # every call fails once, then succeeds
            mode = "ok" if self.signatures().count(request.signature) > 1 else "status-503"
        if mode == "once-503":  # the first request fails, every other succeeds
            mode = "ok" if number > 1 else "status-503"
        if mode.startswith("status-"):
            status = int(mode.split("-")[1])
            headers = {"Retry-After": self.retry_after} if status == 429 else {}  # only the first request gets a 429
            if status == 429 and number > 1:
                return send(h, 200, completion(reply_to(request)))
            return send(h, status, {"error": {"message": f"fault {status}", "type": "fault"}}, headers)
        if mode.startswith("echo-key-"):
            status = int(mode.rsplit("-", 1)[1])
            return send(h, status, {"error": {"message": f"Incorrect API key provided: {request.authorization}",
                                              "type": "invalid_request_error"}})
        if mode == "reset":
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            h.connection.close()
            h.close_connection = True
            return None
        if mode == "hang":
            self._release.wait(60)
            h.close_connection = True
            return None
        if mode == "empty":
            return send_raw(h, 200, b"")
        if mode == "non-json":
            return send_raw(h, 200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
        if mode == "no-choices":
            return send(h, 200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []})
        if mode == "null-content":
            return send(h, 200, completion(None))
        if mode == "bad-usage":
            reply = completion(reply_to(request))
            reply["usage"] = {"prompt_tokens": "lots", "completion_tokens": -5}
            return send(h, 200, reply)
        if mode == "huge":
            return send_raw(h, 200, huge_body())
        if mode == "huge-chunked":
            return send_chunked(h, huge_body())
        if mode == "gzip-bomb":
            return send_raw(h, 200, gzip_body(), headers={"Content-Encoding": "gzip"})
        if mode == "long-text":
            return send(h, 200, completion(reply_to(request) + " and" * (LONG_TEXT_CHARS // 4)))
        if request.logprobs and self.logprobs is not None:
            data = json.dumps(completion("A")).replace('"finish_reason"',
                                                       f'"logprobs": {self.logprobs}, "finish_reason"')
            return send_raw(h, 200, data.encode("utf-8"))
        if mode == "escapes":
            text = reply_to(request)
            if request.response_format is None:
                text = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m " + text
            return send(h, 200, completion(text))
        return send(h, 200, completion(reply_to(request)))

    # --- what was asked ---------------------------------------------------------------------
    def signatures(self, since: int = 0) -> list[tuple[str, ...]]:
        with self._lock:
            return [r.signature for r in self.requests[since:]]


def send(h: BaseHTTPRequestHandler, status: int, payload: Any, headers: Optional[dict] = None) -> None:
    send_raw(h, status, json.dumps(payload).encode("utf-8"), "application/json", headers)


def send_raw(h: BaseHTTPRequestHandler, status: int, data: bytes, kind: str = "application/json",
             headers: Optional[dict] = None) -> None:
    try:
        h.send_response(status)
        h.send_header("Content-Type", kind)
        h.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            h.send_header(name, value)
        h.end_headers()
        h.wfile.write(data)
    except OSError:  # the client went away (a timeout, a kill)
        h.close_connection = True


def forward(h: BaseHTTPRequestHandler, upstream: str, raw: bytes) -> None:
    """The request sent on to `upstream` (a real server); its answer sent back as it came."""
    path = h.path.removeprefix("/v1")
    request = urllib.request.Request(upstream.rstrip("/") + path, data=raw, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=300) as reply:
            status, data = reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        status, data = exc.code, exc.read()
    send_raw(h, status, data)


def send_chunked(h: BaseHTTPRequestHandler, data: bytes, piece: int = 65536) -> None:
    """A 200 without Content-Length: the size is known only by reading it all."""
    try:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        for start in range(0, len(data), piece):
            chunk = data[start:start + piece]
            h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        h.wfile.write(b"0\r\n\r\n")
    except OSError:  # the client stopped reading (as it should, past its limit)
        h.close_connection = True


@functools.cache
def huge_body() -> bytes:
    """A 3 MB chat completion, made once (made per request, it could outlast a client's timeout)."""
    return json.dumps(completion("lol " * (HUGE_BYTES // 4))).encode("utf-8")


@functools.cache
def gzip_body() -> bytes:
    return gzip.compress(huge_body(), 1)


def completion(content: Optional[str]) -> dict:
    words = len((content or "").split())
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "fault",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": words, "total_tokens": 10 + words}}


def reply_to(request: Request) -> str:
    """A deterministic reply: a valid object for a structured request, else a short text."""
    digest = hashlib.sha256(json.dumps(request.signature).encode("utf-8")).hexdigest()[:8]
    schema = structured_schema(request.response_format)
    if schema is not None:
        return json.dumps(example(schema, schema.get("$defs", {})))
    return f"Reply {digest}: on balance I lean towards the first option, for the reasons given."


def structured_schema(response_format: Optional[dict]) -> Optional[dict]:
    if not response_format:
        return None
    if response_format.get("type") == "json_schema":
        return response_format["json_schema"]["schema"]
    return response_format.get("schema")


def example(schema: dict, defs: dict) -> Any:
    """The simplest value `schema` admits (first enum value, minimum number, short string)."""
    if "$ref" in schema:
        return example(defs[schema["$ref"].rsplit("/", 1)[1]], defs)
    for combined in ("anyOf", "oneOf", "allOf"):
        if combined in schema:
            return example(schema[combined][0], defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "object":
        return {k: example(v, defs) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [example(schema.get("items", {}), defs)] * int(schema.get("minItems", 0))
    if kind in ("integer", "number"):
        low, high = schema.get("minimum", 7), schema.get("maximum", 7)
        return max(low, min(7, high))
    if kind == "boolean":
        return True
    return "fine"[: int(schema.get("maxLength", 4))] or "ok"
