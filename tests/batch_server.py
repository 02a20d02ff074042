"""A loopback implementation of OpenAI's Files and Batches endpoints and of Anthropic's Message
Batches that runs every line for real.

`BatchServer(upstream)` serves, on a free loopback port (`url`, to pass as --base-url or as
`backends.anthropic.base_url`):

    POST /v1/files                  a JSONL file of requests (multipart, purpose=batch)
    GET  /v1/files/ID/content       a file's content (an input, or a batch's output or errors)
    POST /v1/batches                a batch of a file; its lines run in the background
    GET  /v1/batches/ID, /v1/batches   a batch's status and request counts; the batches made
    POST /v1/messages/batches       a Message Batch (`{requests: [{custom_id, params}]}`, checked as
                                    Anthropic checks it: the version header, custom_ids); its requests run
                                    in the background
    GET  /v1/messages/batches/ID    its `processing_status`, `request_counts` and, once ended, `results_url`
    GET  /v1/messages/batches/ID/results   its results (`{custom_id, result: {type, message | error}}` a line)

Each line is POSTed to the upstream model server (llama-server: `UPSTREAM/chat/completions`,
`UPSTREAM/completions` or `UPSTREAM/messages`). An OpenAI line's reply becomes an output line
(`{id, custom_id, response: {status_code, body}, error}`; a reply that is no success goes to the
error file), a Message Batch request's a result (`succeeded` with the message, or `errored` with
an Anthropic error of its status's type). `faults` injects what a provider can do wrong, to the
next batch made only: `reject_create` (HTTP 400 at creation), `reject` (the batch fails
validation; a Message Batch, which Anthropic validates at creation only, is refused with HTTP 400),
`expire` (it expires with half its lines run), `drop` (N output lines left out), `reorder` (output
lines reversed), `unknown` (a reply for an id never sent). `executed` counts lines run upstream;
`batches` the batches made (`message_batches` the Message Batches). Used by
tests/test_batch_api.py and benchmarks/bench_batch.py.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Optional

import aiohttp
from aiohttp import web

FAULTS = ("reject_create", "reject", "expire", "drop", "reorder", "unknown")
CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")  # what Anthropic takes as a custom_id
ERROR_TYPES = {400: "invalid_request_error", 404: "not_found_error", 413: "request_too_large",
               429: "rate_limit_error", 529: "overloaded_error"}  # any other status: api_error


@dataclass
class Batch:
    id: str
    input_file_id: str
    endpoint: str
    faults: dict[str, Any]
    status: str = "validating"
    total: int = 0
    completed: int = 0
    failed: int = 0
    output_file_id: Optional[str] = None
    error_file_id: Optional[str] = None
    errors: list[dict[str, Any]] = field(default_factory=list)

    def body(self) -> dict[str, Any]:
        return {"id": self.id, "object": "batch", "endpoint": self.endpoint, "input_file_id": self.input_file_id,
                "completion_window": "24h", "status": self.status, "created_at": int(time.time()),
                "output_file_id": self.output_file_id, "error_file_id": self.error_file_id,
                "errors": {"object": "list", "data": self.errors} if self.errors else None,
                "request_counts": {"total": self.total, "completed": self.completed, "failed": self.failed}}


@dataclass
class MessageBatch:
    id: str
    requests: list[dict[str, Any]]
    faults: dict[str, Any]
    results_url: str
    status: str = "in_progress"
    counts: dict[str, int] = field(default_factory=dict)
    created_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat())

    def __post_init__(self) -> None:
        self.counts = {"processing": len(self.requests), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}

    def body(self) -> dict[str, Any]:
        ended = self.status == "ended"
        return {"id": self.id, "type": "message_batch", "processing_status": self.status,
                "request_counts": dict(self.counts), "created_at": self.created_at, "expires_at": self.created_at,
                "ended_at": self.created_at if ended else None, "archived_at": None, "cancel_initiated_at": None,
                "results_url": self.results_url if ended else None}


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


def faulted(lines: list[dict[str, Any]], faults: dict[str, Any], stranger: dict[str, Any]) -> list[dict[str, Any]]:
    """Output lines as the faults leave them: `drop` first ones out, `reorder`, `stranger` added (`unknown`)."""
    lines = lines[int(faults.get("drop", 0)):]
    if faults.get("reorder"):
        lines.reverse()
    return lines + [stranger] if faults.get("unknown") else lines


class BatchServer:
    """See the module docstring; a `with` block starts and stops it (on a thread of its own)."""

    def __init__(self, upstream: str, parallel: int = 4):
        self.upstream, self.parallel = upstream.rstrip("/"), parallel
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, Batch] = {}
        self.message_batches: dict[str, MessageBatch] = {}
        self.faults: dict[str, Any] = {}
        self.executed = 0
        self._ids = itertools.count(1)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: Optional[web.AppRunner] = None
        self.url = ""

    def __enter__(self) -> "BatchServer":
        self._thread.start()
        port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)
        self.url = f"http://127.0.0.1:{port}/v1"
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> int:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.add_routes([web.post("/v1/files", self.upload), web.get("/v1/files/{id}/content", self.content),
                        web.post("/v1/batches", self.create), web.get("/v1/batches", self.listing),
                        web.get("/v1/batches/{id}", self.retrieve),
                        web.post("/v1/messages/batches", self.create_messages),
                        web.get("/v1/messages/batches/{id}", self.retrieve_messages),
                        web.get("/v1/messages/batches/{id}/results", self.message_results)])
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return int(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids)}"

    async def upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        part = form.get("file")
        data = part.file.read() if hasattr(part, "file") else str(part or "").encode()
        file_id = self._id("file")
        self.files[file_id] = data
        return web.json_response({"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                                  "filename": getattr(part, "filename", "batch.jsonl"), "purpose": "batch",
                                  "status": "processed"})

    async def content(self, request: web.Request) -> web.Response:
        data = self.files.get(request.match_info["id"])
        if data is None:
            return web.json_response({"error": {"message": "no such file"}}, status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    async def create(self, request: web.Request) -> web.Response:
        body = await request.json()
        faults, self.faults = self.faults, {}
        if faults.get("reject_create"):
            return web.json_response({"error": {"message": "the input file is not valid", "type": "invalid_request_error"}},
                                     status=400)
        if body.get("input_file_id") not in self.files:
            return web.json_response({"error": {"message": "no such file"}}, status=400)
        batch = Batch(self._id("batch"), body["input_file_id"], body.get("endpoint", ""), faults)
        self.batches[batch.id] = batch
        asyncio.ensure_future(self._run(batch))
        return web.json_response(batch.body())

    async def retrieve(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return web.json_response({"error": {"message": "no such batch"}}, status=404)
        return web.json_response(batch.body())

    async def listing(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [b.body() for b in reversed(self.batches.values())],
                                  "has_more": False})

    async def _run(self, batch: Batch) -> None:
        lines = [json.loads(line) for line in self.files[batch.input_file_id].decode().splitlines() if line.strip()]
        batch.total = len(lines)
        if batch.faults.get("reject"):
            batch.status, batch.errors = "failed", [{"code": "invalid_request", "line": 1,
                                                     "message": "this model does not take batches"}]
            return
        batch.status = "in_progress"
        run = lines[:len(lines) // 2] if batch.faults.get("expire") else lines
        replies = await self._each(run, lambda session, slots, line: self._line(session, slots, batch, line))
        outputs = [r for r in replies if r["response"]["status_code"] == 200]
        errors = [r for r in replies if r["response"]["status_code"] != 200]
        if batch.faults.get("expire"):
            errors += [{"id": self._id("req"), "custom_id": line["custom_id"], "response": None,
                        "error": {"code": "batch_expired", "message": "This request could not be executed before "
                                  "the completion window expired."}} for line in lines[len(run):]]
        outputs = faulted(outputs, batch.faults, {"id": "req-never-sent", "custom_id": "never-sent", "response": {
            "status_code": 200, "body": {"choices": [{"message": {"content": "?"}}]}}, "error": None})
        batch.status = "finalizing"
        batch.output_file_id = self._file(outputs)
        batch.error_file_id = self._file(errors) if errors else None
        batch.status = "expired" if batch.faults.get("expire") else "completed"

    def _file(self, lines: list[dict[str, Any]]) -> str:
        file_id = self._id("file")
        self.files[file_id] = "".join(json.dumps(line) + "\n" for line in lines).encode()
        return file_id

    async def _each(self, lines: list[dict[str, Any]], run: Any) -> list[dict[str, Any]]:
        """`run(session, slots, line)` of every line, at most `parallel` at once."""
        slots = asyncio.Semaphore(self.parallel)
        async with aiohttp.ClientSession() as session:
            return list(await asyncio.gather(*(run(session, slots, line) for line in lines)))

    async def _post(self, session: aiohttp.ClientSession, slots: asyncio.Semaphore, path: str,
                    body: dict[str, Any]) -> tuple[int, Any]:
        """One request run upstream: its status and reply."""
        async with slots:
            async with session.post(self.upstream + path, json=body) as response:
                status, reply = response.status, await response.json(content_type=None)
        self.executed += 1
        return status, reply

    async def _line(self, session: aiohttp.ClientSession, slots: asyncio.Semaphore, batch: Batch,
                    line: dict[str, Any]) -> dict[str, Any]:
        status, body = await self._post(session, slots, line["url"].removeprefix("/v1"), line["body"])
        if status == 200:
            batch.completed += 1
        else:
            batch.failed += 1
        return {"id": self._id("req"), "custom_id": line["custom_id"],
                "response": {"status_code": status, "request_id": self._id("r"), "body": body}, "error": None}

    # --- Anthropic's Message Batches -------------------------------------------------------------

    async def create_messages(self, request: web.Request) -> web.Response:
        body = await request.json()
        faults, self.faults = self.faults, {}
        refused = self._invalid(request, body) or (
            "the requests are not valid" if faults.get("reject_create") or faults.get("reject") else "")
        if refused:
            return web.json_response(anthropic_error(400, refused), status=400)
        batch_id = self._id("msgbatch")
        batch = MessageBatch(batch_id, body["requests"], faults, f"{self.url}/messages/batches/{batch_id}/results")
        self.message_batches[batch.id] = batch
        asyncio.ensure_future(self._run_messages(batch))
        return web.json_response(batch.body())

    @staticmethod
    def _invalid(request: web.Request, body: Any) -> str:
        """Why Anthropic would refuse this batch, if it would."""
        if not request.headers.get("anthropic-version"):
            return "anthropic-version: header is required"
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return "requests: at least one request is required"
        ids = [r.get("custom_id") if isinstance(r, dict) else None for r in requests]
        if not all(isinstance(i, str) and CUSTOM_ID.fullmatch(i) for i in ids):
            return "requests: each custom_id must match ^[a-zA-Z0-9_-]{1,64}$"
        if len(set(ids)) != len(ids):
            return "requests: custom_ids must be unique"
        if not all(isinstance(r.get("params"), dict) for r in requests):
            return "requests: each request needs its params"
        return ""

    async def retrieve_messages(self, request: web.Request) -> web.Response:
        batch = self.message_batches.get(request.match_info["id"])
        if batch is None:
            return web.json_response(anthropic_error(404, "no such message batch"), status=404)
        return web.json_response(batch.body())

    async def message_results(self, request: web.Request) -> web.Response:
        data = self.files.get(request.match_info["id"])
        if data is None:
            return web.json_response(anthropic_error(404, "no results for this batch (yet)"), status=404)
        return web.Response(body=data, content_type="application/binary")

    async def _run_messages(self, batch: MessageBatch) -> None:
        requests = batch.requests
        run = requests[:len(requests) // 2] if batch.faults.get("expire") else requests
        results = await self._each(run, lambda session, slots, line: self._message(session, slots, batch, line))
        results += [{"custom_id": line["custom_id"], "result": {"type": "expired"}} for line in requests[len(run):]]
        batch.counts["processing"] -= len(requests) - len(run)
        batch.counts["expired"] += len(requests) - len(run)
        stranger = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "?"}]}
        results = faulted(results, batch.faults, {"custom_id": "never-sent", "result": {"type": "succeeded",
                                                                                    "message": stranger}})
        self.files[batch.id] = "".join(json.dumps(line) + "\n" for line in results).encode()
        batch.status = "ended"

    async def _message(self, session: aiohttp.ClientSession, slots: asyncio.Semaphore, batch: MessageBatch,
                       line: dict[str, Any]) -> dict[str, Any]:
        status, body = await self._post(session, slots, "/messages", line["params"])
        batch.counts["processing"] -= 1
        kind = "succeeded" if status == 200 else "errored"
        batch.counts[kind] += 1
        if status == 200:
            return {"custom_id": line["custom_id"], "result": {"type": kind, "message": body}}
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else str(body)[:200]
        return {"custom_id": line["custom_id"], "result": {"type": kind,
                                                          "error": anthropic_error(status, str(message))}}
