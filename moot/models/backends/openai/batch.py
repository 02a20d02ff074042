"""OpenAI's Batch API for `--batch` (moot.models.batch): files of requests in, files of replies out.

A wave's requests to one model and endpoint are one JSONL file (`{custom_id, method, url, body}`
a line, uploaded with purpose `batch`), made a batch with a 24-hour window, polled
(`validating`, `in_progress`, `finalizing`, then `completed`, `expired`, `cancelled` or `failed`),
and its output and error files downloaded (`{custom_id, response: {status_code, body}, error}` a
line). Files are read through a connection pool of their own, bounded at MAX_FILE_BYTES (a wave's
replies are far more than one reply's 1 MiB). Any server speaking these endpoints will do (the
tests' loopback one runs each line on llama-server).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal, Optional

import openai

from moot.models.batch import BatchState, Batcher, output_line
from moot.models.batch_journal import LineResult
from moot.models.bounded import bounded_http_hooks

if TYPE_CHECKING:
    from moot.models.backends.openai.client import OpenAIClient

MAX_FILE_BYTES = 512 * 1024 * 1024
FIND_AT_MOST = 1000  # batches looked through for the one made of a file uploaded before a kill
STATUS = {"validating": "running", "in_progress": "running", "finalizing": "running", "cancelling": "running",
          "completed": "completed", "expired": "expired", "cancelled": "cancelled", "failed": "failed"}
Endpoint = Literal["/v1/chat/completions", "/v1/completions"]
ENDPOINTS: dict[str, Endpoint] = {"/chat/completions": "/v1/chat/completions", "/completions": "/v1/completions"}


def attach(client: "OpenAIClient", batcher: Batcher) -> None:
    """Send this client's requests through `batcher`, one lane per model and endpoint."""
    client.lane = batcher.lane(("openai", str(client.sdk.base_url), client.model), lambda: OpenAIBatches(client))


class OpenAIBatches:
    """The Files and Batches endpoints of the server a client talks to, with its credentials."""

    def __init__(self, client: "OpenAIClient"):
        self.http = openai.DefaultAioHttpClient(event_hooks=bounded_http_hooks(MAX_FILE_BYTES))
        self.sdk = openai.AsyncOpenAI(api_key=client.sdk.api_key, base_url=client.sdk.base_url, max_retries=2,
                                      default_headers=client.endpoint_headers or None,
                                      default_query=client.query or None, http_client=self.http)

    def line(self, custom_id: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"custom_id": custom_id, "method": "POST", "url": ENDPOINTS[path], "body": body}

    async def upload(self, path: str, lines: list[dict[str, Any]]) -> str:
        data = "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines)
        return (await self.sdk.files.create(file=("moot-batch.jsonl", data.encode("utf-8"), "application/jsonl"),
                                            purpose="batch")).id

    async def create(self, file_id: str, path: str) -> str:
        return (await self.sdk.batches.create(input_file_id=file_id, endpoint=ENDPOINTS[path],
                                              completion_window="24h")).id

    async def find(self, file_id: str) -> Optional[str]:
        seen = 0
        async for batch in self.sdk.batches.list(limit=100):
            if batch.input_file_id == file_id and STATUS.get(batch.status) != "failed":
                return batch.id
            seen += 1
            if seen >= FIND_AT_MOST:
                break
        return None

    async def state(self, batch_id: str) -> BatchState:
        batch = await self.sdk.batches.retrieve(batch_id)
        counts = batch.request_counts
        errors = batch.errors.data if batch.errors and batch.errors.data else []
        first = errors[0] if errors else None
        reason = (f"line {first.line}: " if first and first.line else "") + (first.message or first.code or "")[:300] \
            if first else ""
        status = STATUS.get(batch.status)
        if status is None:
            status, reason = "failed", f"the provider reports status {str(batch.status)[:40]!r}, which moot does not know"
        return BatchState(status, (counts.completed + counts.failed) if counts else 0, counts.total if counts else 0,
                          reason or "no reason given", (batch.output_file_id, batch.error_file_id))

    async def results(self, state: BatchState) -> tuple[list[LineResult], int]:
        """The replies of the output file, then the error file's, in their order; the number of
        lines that are no reply."""
        found: list[LineResult] = []
        unreadable = 0
        for file in state.files:
            if not file:
                continue
            text = (await self.sdk.files.content(file)).text
            for line in text.splitlines():
                result = line_result(line) if line.strip() else None
                if result is None and line.strip():
                    unreadable += 1
                if result is not None:
                    found.append(result)
        return found, unreadable

    async def close(self) -> None:
        await self.sdk.close()


def line_result(line: str) -> Optional[LineResult]:
    """One output (or error) line as a LineResult; None when it names no request."""
    record = output_line(line)
    if record is None:
        return None
    response = record.get("response") if isinstance(record.get("response"), dict) else None
    error = record.get("error") if isinstance(record.get("error"), dict) else {}
    status = response.get("status_code") if response else 0
    return LineResult(record["custom_id"], status if isinstance(status, int) else 0,
                      response.get("body") if response else None,
                      str((error or {}).get("message") or (error or {}).get("code") or "")[:300])
