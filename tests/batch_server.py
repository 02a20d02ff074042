"""A loopback implementation of OpenAI's Files and Batches endpoints that runs every line for real.

`BatchServer(upstream)` serves, on a free loopback port (`url`, to pass as --base-url):

    POST /v1/files                  a JSONL file of requests (multipart, purpose=batch)
    GET  /v1/files/ID/content       a file's content (an input, or a batch's output or errors)
    POST /v1/batches                a batch of a file; its lines run in the background
    GET  /v1/batches/ID, /v1/batches   a batch's status and request counts; the batches made

Each line is POSTed to the upstream model server (llama-server: `UPSTREAM/chat/completions` or
`UPSTREAM/completions`) and its reply becomes an output line (`{id, custom_id, response:
{status_code, body}, error}`; a reply that is no success goes to the error file). `faults` injects
what a provider can do wrong, to the next batch made only: `reject_create` (HTTP 400 at
creation), `reject` (the batch fails validation), `expire` (it expires with half its lines run),
`drop` (N output lines left out), `reorder` (output lines reversed), `unknown` (a reply for an id
never sent). `executed` counts lines run upstream; `batches` the batches made. Used by
tests/test_batch_api.py and benchmarks/bench_batch.py.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import aiohttp
from aiohttp import web

FAULTS = ("reject_create", "reject", "expire", "drop", "reorder", "unknown")


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


class BatchServer:
    """See the module docstring; a `with` block starts and stops it (on a thread of its own)."""

    def __init__(self, upstream: str, parallel: int = 4):
        self.upstream, self.parallel = upstream.rstrip("/"), parallel
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, Batch] = {}
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
                        web.get("/v1/batches/{id}", self.retrieve)])
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
        slots = asyncio.Semaphore(self.parallel)
        async with aiohttp.ClientSession() as session:
            replies = await asyncio.gather(*(self._line(session, slots, batch, line) for line in run))
        outputs = [r for r in replies if r["response"]["status_code"] == 200]
        errors = [r for r in replies if r["response"]["status_code"] != 200]
        if batch.faults.get("expire"):
            errors += [{"id": self._id("req"), "custom_id": line["custom_id"], "response": None,
                        "error": {"code": "batch_expired", "message": "This request could not be executed before "
                                  "the completion window expired."}} for line in lines[len(run):]]
        outputs = outputs[int(batch.faults.get("drop", 0)):]
        if batch.faults.get("reorder"):
            outputs.reverse()
        if batch.faults.get("unknown"):
            outputs.append({"id": self._id("req"), "custom_id": "never-sent", "response": {"status_code": 200,
                            "body": {"choices": [{"message": {"content": "?"}}]}}, "error": None})
        batch.status = "finalizing"
        batch.output_file_id = self._file(outputs)
        batch.error_file_id = self._file(errors) if errors else None
        batch.status = "expired" if batch.faults.get("expire") else "completed"

    def _file(self, lines: list[dict[str, Any]]) -> str:
        file_id = self._id("file")
        self.files[file_id] = "".join(json.dumps(line) + "\n" for line in lines).encode()
        return file_id

    async def _line(self, session: aiohttp.ClientSession, slots: asyncio.Semaphore, batch: Batch,
                    line: dict[str, Any]) -> dict[str, Any]:
        async with slots:
            url = self.upstream + line["url"].removeprefix("/v1")
            async with session.post(url, json=line["body"]) as response:
                status, body = response.status, await response.json(content_type=None)
        self.executed += 1
        if status == 200:
            batch.completed += 1
        else:
            batch.failed += 1
        return {"id": self._id("req"), "custom_id": line["custom_id"],
                "response": {"status_code": status, "request_id": self._id("r"), "body": body}, "error": None}
