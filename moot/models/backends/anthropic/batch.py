"""Anthropic's Message Batches for `--batch` (moot.models.batch): a wave's requests in, JSONL results out.

A wave's requests to one model are one batch, sent inline (`POST /v1/messages/batches` with
`{"requests": [{"custom_id", "params"}]}`, each `params` the Messages API body a direct call sends),
polled (`GET /v1/messages/batches/ID`: `processing_status` `in_progress` or `canceling`, then
`ended`, with `request_counts`), and its results read once ended (`{"custom_id", "result": {"type":
"succeeded", "message"}}`, or `errored` with the API's error, `canceled`, `expired`; in any order).
Results are read from the endpoint's own `/v1/messages/batches/ID/results`: the batch's
`results_url` only says they are ready, so the key never goes to a host the server names.

There are no files: `upload` only holds a wave's lines under an id of moot's own (`local-...`), which
the journal records before `create` sends them. Anthropic's batches carry nothing of moot's to be
recognised by, so `find` finds none: requests whose batch was being created when the process was
killed (the moment between the request and its reply being journaled) are sent again.
"""

from __future__ import annotations

import uuid
from typing import Any, Mapping, Optional
from urllib.parse import quote

import httpx

from moot.models.backends.anthropic.client import AnthropicClient, AnthropicStatusError, count
from moot.models.batch import BatchState, Batcher, output_line
from moot.models.batch_journal import LineResult
from moot.models.bounded import bounded_http_hooks

MAX_FILE_BYTES = 512 * 1024 * 1024  # a batch's results (a wave's replies) are read up to this size
TIMEOUT_S = 600.0  # one request to the batch endpoints (a 50,000-request batch is large to send)
STATUS = {"in_progress": "running", "canceling": "running"}  # `ended`: completed, expired or cancelled (ended_as)
ENDED = ("succeeded", "errored", "canceled", "expired")  # request_counts of requests that are done
ERROR_STATUS = {"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
                "permission_error": 403, "not_found_error": 404, "request_too_large": 413,
                "rate_limit_error": 429, "api_error": 500, "timeout_error": 504, "overloaded_error": 529}


def attach(client: AnthropicClient, batcher: Batcher) -> None:
    """Send this client's requests through `batcher`, one lane per model and endpoint."""
    client.lane = batcher.lane(("anthropic", client.url, client.model), lambda: MessageBatches(client))


class MessageBatches:
    """The Message Batches endpoints beside a client's Messages endpoint, with its credentials."""

    def __init__(self, client: AnthropicClient):
        self.url = f"{client.url}/batches"
        self.http = httpx.AsyncClient(headers=client.http.headers, params=client.http.params, timeout=TIMEOUT_S,
                                      event_hooks=bounded_http_hooks(MAX_FILE_BYTES))
        self._held: dict[str, list[dict[str, Any]]] = {}  # a wave's lines, by moot's id, until created

    def line(self, custom_id: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"custom_id": custom_id, "params": body}

    async def upload(self, path: str, lines: list[dict[str, Any]]) -> str:
        held = f"local-{uuid.uuid4().hex}"
        self._held[held] = lines
        return held

    async def create(self, file_id: str, path: str) -> str:
        return str((await self._json("POST", self.url, {"requests": self._held.pop(file_id)}))["id"])

    async def find(self, file_id: str) -> Optional[str]:
        return None  # module docstring: nothing to recognise a batch by

    async def state(self, batch_id: str) -> BatchState:
        batch = await self._json("GET", f"{self.url}/{quote(batch_id, safe='')}")
        counts = part(batch, "request_counts")
        done = sum(count(counts.get(k)) for k in ENDED)
        total = done + count(counts.get("processing"))
        status = str(batch.get("processing_status"))
        if status == "ended":
            return BatchState(ended_as(counts), done, total, files=(self._results(batch_id, batch),))
        if status in STATUS:
            return BatchState(STATUS[status], done, total)
        return BatchState("failed", done, total, f"the provider reports processing_status {status[:40]!r}, which "
                                                  "moot does not know")

    def _results(self, batch_id: str, batch: Mapping[str, Any]) -> Optional[str]:
        return f"{self.url}/{quote(batch_id, safe='')}/results" if batch.get("results_url") else None

    async def results(self, state: BatchState) -> tuple[list[LineResult], int]:
        """The results, in their order; the number of lines that are no result."""
        lines = [line for url in state.files if url
                 for line in (await self._request("GET", url)).text.splitlines() if line.strip()]
        found = [line_result(line) for line in lines]
        return [r for r in found if r is not None], sum(1 for r in found if r is None)

    async def _request(self, method: str, url: str, body: Optional[dict[str, Any]] = None) -> httpx.Response:
        response = await self.http.request(method, url, json=body)
        if not response.is_success:
            raise AnthropicStatusError(response)
        return response

    async def _json(self, method: str, url: str, body: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        found = (await self._request(method, url, body)).json()
        if not isinstance(found, dict) or not isinstance(found.get("id"), str):
            raise ValueError("the server's reply is no Message Batch (it has no id)")
        return found

    async def close(self) -> None:
        await self.http.aclose()


def ended_as(counts: Mapping[str, Any]) -> str:
    """An ended batch as moot.models.batch names it: expired or cancelled when some of its requests were."""
    if count(counts.get("expired")):
        return "expired"
    return "cancelled" if count(counts.get("canceled")) else "completed"


def line_result(line: str) -> Optional[LineResult]:
    """One results line as a LineResult (an error with the HTTP status its type has; no reply when
    canceled or expired); None when it names no request."""
    record = output_line(line)
    if record is None:
        return None
    custom_id = record["custom_id"]
    result = part(record, "result")
    kind = result.get("type")
    if kind == "succeeded" and isinstance(result.get("message"), dict):
        return LineResult(custom_id, 200, result["message"])
    if kind == "errored":
        cause = part(part(result, "error"), "error")  # {"type": "error", "error": {"type", "message"}}
        return LineResult(custom_id, ERROR_STATUS.get(str(cause.get("type")), 500), {"error": cause},
                          str(cause.get("message") or cause.get("type") or "")[:300])
    return LineResult(custom_id, 0, error=f"the request {str(kind)[:40]}")


def part(record: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The object at `key`, or an empty one where the server sent none."""
    found = record.get(key)
    return found if isinstance(found, dict) else {}
