"""Model calls sent in waves through a provider's batch API (`--batch`): about half the price, within a day.

Units run as usual; a call whose client is batched (moot.models.engine attaches the provider's
batch module, e.g. moot.models.backends.openai.batch) does not go to the server but waits in the next
wave. A wave goes as soon as every unit still to finish is waiting on a call (or after
`BatchPolicy.idle_s` with nothing new asked), as one batch per model and endpoint: a multi-turn
protocol takes one wave per turn across all its items. Each batch is uploaded, submitted, polled
and downloaded; its replies come back to the calls waiting on them, which the engine caches,
counts and records exactly like direct replies.

Each request's id (`custom_id`) is the hash of what it sends, and every step is journaled in the
run folder before it counts (moot.models.batch_journal): a killed process re-attaches to its
batches and sends no call twice. What a provider can get wrong is one line on stderr each, and
nothing is lost: replies missing from the output, or of an expired or cancelled batch, go into
the next wave (at most LOST_WAVES times); replies for ids never sent are ignored; a line the
provider answered with an HTTP error fails or is retried as that status would be directly; a batch
the provider rejects stops the run, resumably (BatchRejected).
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Protocol

from moot.models.batch_journal import Journal, LineResult
from moot.models.calls import FatalModelError, show_wait, status_of
from moot.safety.secrets import describe

LOST_WAVES = 3  # a request without a reply goes into this many more waves, then fails as a call does
WINDOW_S = 24 * 3600.0  # a batch's completion window: a batched call may wait this long (and a margin)
MAX_POLL_FAILURES = 5  # polls in a row that fail before the calls waiting on the batch fail (resumably)
UNIT: contextvars.ContextVar[Optional[object]] = contextvars.ContextVar("moot_batch_unit", default=None)


@dataclass(frozen=True)
class BatchPolicy:
    """How waves are gathered and batches polled: first poll after `poll_s`, then 1.5 times longer
    each time up to `max_poll_s`; a wave goes after `idle_s` with nothing new asked even if some
    unit is still busy; at most `max_lines` requests per batch (OpenAI's limit)."""

    poll_s: float = 1.0
    max_poll_s: float = 60.0
    idle_s: float = 5.0
    max_lines: int = 50_000


@dataclass(frozen=True)
class BatchState:
    """A batch as the provider reports it. `status`: running, completed, expired, cancelled or
    failed (rejected: `reason` says why); `files`: where its replies are (the provider's own)."""

    status: str
    done: int
    total: int
    reason: str = ""
    files: tuple[Optional[str], ...] = ()


class BatchAPI(Protocol):
    """A provider's batch endpoints (moot.models.backends.openai.batch is OpenAI's)."""

    def line(self, custom_id: str, path: str, body: dict[str, Any]) -> dict[str, Any]: ...

    async def upload(self, path: str, lines: list[dict[str, Any]]) -> str: ...

    async def create(self, file_id: str, path: str) -> str: ...

    async def find(self, file_id: str) -> Optional[str]: ...

    async def state(self, batch_id: str) -> BatchState: ...

    async def results(self, state: BatchState) -> tuple[list[LineResult], int]: ...

    async def close(self) -> None: ...


class BatchRejected(FatalModelError):
    """A batch the provider refused (at submission, or when it validated the file): no retry of
    the same file can pass, so the run stops; the same command continues it."""

    resumes = True


class LineFailed(RuntimeError):
    """A request the provider answered with an HTTP error inside a batch; `status_code` makes it
    fatal (4xx) or retried (429, 5xx) as the same status would be directly."""

    def __init__(self, status: int, cause: str):
        super().__init__(f"HTTP {status} in a batch: {cause}"[:300])
        self.status_code = status


class LineLost(RuntimeError):
    """A request that came back without a reply from LOST_WAVES more waves; retried as a call."""


@dataclass
class BatchStats:
    """What the status line shows: waves sent, batches and their progress, the time waiting."""

    waves: int = 0
    batches: int = 0
    requests: int = 0
    running: dict[str, tuple[int, int]] = field(default_factory=dict)  # batch id -> (done, total)
    since: Optional[float] = None  # when the oldest batch still running was submitted (monotonic)

    def text(self) -> str:
        done = sum(d for d, _ in self.running.values())
        total = sum(t for _, t in self.running.values())
        waiting = f" waiting {time.monotonic() - self.since:.0f}s" if self.since is not None else ""
        progress = f" batch {done}/{total}" if self.running else ""
        return f"waves={self.waves} batches={self.batches}{progress}{waiting}"


@dataclass(frozen=True)
class Pending:
    lane: "Lane"
    custom_id: str
    path: str
    body: dict[str, Any]


def request_id(path: str, body: dict[str, Any]) -> str:
    """A request's `custom_id`: the hash of where it goes and everything it sends."""
    blob = json.dumps({"path": path, "body": body}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def output_line(line: str) -> Optional[dict[str, Any]]:
    """A line of a batch's output as the object it is, or None when it is none or names no request
    (`custom_id`): the provider's module reads the rest."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) and isinstance(record.get("custom_id"), str) else None


def reply_of(result: LineResult) -> dict[str, Any]:
    """A line's reply body, or the error a direct call would have met."""
    if result.status == 200 and isinstance(result.body, dict):
        return result.body
    if result.status == 0:
        raise LineLost(result.error or "no reply in the batch")
    error = result.body.get("error") if isinstance(result.body, dict) else None
    message = error.get("message") if isinstance(error, dict) else result.error or result.body
    raise LineFailed(result.status, str(message))


def say(line: str) -> None:
    show_wait(line)  # always shown: a batch's trouble is rare and matters


@dataclass(frozen=True)
class Lane:
    """Where a client's batched requests go: one model on one endpoint of one provider's API."""

    batcher: "Batcher"
    key: tuple[str, ...]
    api: BatchAPI

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.batcher.post(self, path, body)


class Batcher:
    """The waves of one run folder (or an experiment's, shared by its cells), in one event loop."""

    def __init__(self, folder: Path, policy: BatchPolicy = BatchPolicy()):
        self.journal = Journal(folder)
        self.policy = policy
        self.stats = BatchStats()
        self._apis: dict[tuple[str, ...], BatchAPI] = {}
        self._queue: dict[str, Pending] = {}  # the next wave
        self._asked: dict[str, Pending] = {}  # every request waiting, by id
        self._futures: dict[str, asyncio.Future[LineResult]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}  # following a batch (or finding a file's), by its id
        self._delivered: set[str] = set()  # answered in this process: asked again, it is sent again
        self._lost: Counter[str] = Counter()
        self._expected = 0  # units still to finish
        self._blocked: Counter[object] = Counter()  # units waiting on a batched call
        self._timer: Optional[asyncio.Handle] = None

    # --- units ---------------------------------------------------------------------------------

    def expect(self, units: int) -> None:
        """`units` more will run (a run's units without a result yet)."""
        self._expected += units

    @contextmanager
    def unit(self) -> Iterator[None]:
        """Around one unit's run: while it runs, its calls count it as waiting."""
        token = UNIT.set(object())
        try:
            yield
        finally:
            UNIT.reset(token)
            self._expected = max(0, self._expected - 1)
            self._kick()

    @contextmanager
    def _waiting(self) -> Iterator[None]:
        unit = UNIT.get()
        if unit is not None:
            self._blocked[unit] += 1
        try:
            yield
        finally:
            if unit is not None:
                self._blocked[unit] -= 1
                if self._blocked[unit] <= 0:
                    del self._blocked[unit]

    # --- requests ------------------------------------------------------------------------------

    def lane(self, key: tuple[str, ...], make: Callable[[], BatchAPI]) -> Lane:
        """The lane of a model on an endpoint (`key`); its API made once (`make`)."""
        if key not in self._apis:
            self._apis[key] = make()
        return Lane(self, key, self._apis[key])

    async def post(self, lane: Lane, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The reply to one request, once its wave's batch is downloaded."""
        custom_id = request_id(path, body)
        with self._waiting():
            future = self._futures.get(custom_id)
            if future is None:
                future = self._futures[custom_id] = asyncio.get_running_loop().create_future()
                self._route(Pending(lane, custom_id, path, body))
            self._kick()
            try:
                result = await asyncio.shield(future)
            finally:
                if self._futures.get(custom_id) is future:
                    del self._futures[custom_id]
                    self._asked.pop(custom_id, None)
        self._delivered.add(custom_id)
        return reply_of(result)

    def _route(self, request: Pending) -> None:
        """Answered from a downloaded batch, re-attached to one still running or to a file that
        may have become one, else into the next wave."""
        custom_id = request.custom_id
        self._asked[custom_id] = request
        if custom_id not in self._delivered:
            saved = self.journal.answers.get(custom_id)
            if saved is not None:
                self._resolve(saved)
                return
            batch = self.journal.unfinished(custom_id)
            if batch is not None:
                self._follow(request.lane, batch)
                return
            file = self.journal.file_of.get(custom_id)
            if file is not None:
                self._spawn(file, self._recover(request.lane, file))
                return
        self._queue[custom_id] = request

    def _resolve(self, result: LineResult) -> None:
        future = self._futures.get(result.custom_id)
        if future is not None and not future.done():
            future.set_result(result)

    def _fail(self, ids: list[str], error: BaseException) -> None:
        for custom_id in ids:
            future = self._futures.get(custom_id)
            if future is not None and not future.done():
                future.set_exception(error)

    # --- waves ---------------------------------------------------------------------------------

    def _kick(self) -> None:
        """A wave goes once every unit still to finish waits on a call, else after idle_s."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._queue:
            return
        loop = asyncio.get_running_loop()
        everyone = self._expected > 0 and len(self._blocked) >= self._expected
        self._timer = loop.call_soon(self._flush) if everyone else loop.call_later(self.policy.idle_s, self._flush)

    def _flush(self) -> None:
        self._timer = None
        if not self._queue:
            return
        wave, self._queue = list(self._queue.values()), {}
        self.stats.waves += 1
        groups: dict[tuple[tuple[str, ...], str], list[Pending]] = {}
        for request in wave:
            groups.setdefault((request.lane.key, request.path), []).append(request)
        for requests in groups.values():
            for start in range(0, len(requests), self.policy.max_lines):
                chunk = requests[start:start + self.policy.max_lines]
                self._spawn(f"wave-{self.stats.waves}-{chunk[0].custom_id}", self._send(chunk))

    def _spawn(self, name: str, work: Any) -> None:
        if name in self._tasks:
            work.close()
            return
        task = self._tasks[name] = asyncio.ensure_future(work)
        task.add_done_callback(lambda _: self._tasks.pop(name, None))

    async def _send(self, requests: list[Pending]) -> None:
        """Upload a chunk of a wave, make it a batch (each step journaled), follow it."""
        lane, path, ids = requests[0].lane, requests[0].path, [r.custom_id for r in requests]
        try:
            file = await lane.api.upload(path, [lane.api.line(r.custom_id, path, r.body) for r in requests])
            self.journal.write({"event": "uploaded", "file": file, "wave": self.stats.waves, "endpoint": path,
                                "model": lane.key[-1], "custom_ids": ids})
            batch = await lane.api.create(file, path)
        except Exception as exc:  # noqa: BLE001 - the calls fail as their cause would directly
            self._fail(ids, rejected(exc) if status_of(exc) in (400, 404, 413, 422) else exc)
            return
        self.journal.write({"event": "submitted", "batch": batch, "file": file})
        self.stats.batches += 1
        self.stats.requests += len(ids)
        await self._await(lane, batch)

    async def _recover(self, lane: Lane, file: str) -> None:
        """A file uploaded before a kill: the batch made of it, if the provider has one; else its
        requests go into the next wave."""
        ids = list(self.journal.uploaded.get(file, []))
        try:
            batch = await lane.api.find(file)
        except Exception:  # noqa: BLE001 - not found is the same as not made: sent again
            batch = None
        if batch is not None:
            self.journal.write({"event": "submitted", "batch": batch, "file": file})
            await self._await(lane, batch)
            return
        for custom_id in ids:
            self.journal.file_of.pop(custom_id, None)
            if custom_id in self._asked:
                self._queue[custom_id] = self._asked[custom_id]
        self._kick()

    def _follow(self, lane: Lane, batch: str) -> None:
        self._spawn(batch, self._await(lane, batch))

    async def _await(self, lane: Lane, batch: str) -> None:
        """Poll a batch until it ends, download its replies, give each to its call."""
        ids = list(self.journal.members.get(batch, []))
        started = time.monotonic()
        self.stats.since = min(self.stats.since or started, started)
        try:
            state = await self._until_done(lane, batch)
            if state.status == "failed":
                self.journal.write({"event": "rejected", "batch": batch, "reason": state.reason[:500]})
                self._fail(ids, BatchRejected(f"batch {batch} was rejected by the provider: {state.reason}", 0))
                return
            results, unreadable = await lane.api.results(state)
        except Exception as exc:  # noqa: BLE001 - polling gave up: the batch is journaled, a rerun re-attaches
            self._fail(ids, exc)
            return
        finally:
            self.stats.running.pop(batch, None)
            if not self.stats.running:
                self.stats.since = None
        self.journal.downloaded(batch, results)
        self._settle(batch, ids, results, unreadable, state)

    async def _until_done(self, lane: Lane, batch: str) -> BatchState:
        delay, failures = self.policy.poll_s, 0
        while True:
            try:
                state = await lane.api.state(batch)
                failures = 0
            except Exception:
                failures += 1
                if failures >= MAX_POLL_FAILURES:
                    raise
                await asyncio.sleep(delay)
                continue
            self.stats.running[batch] = (state.done, state.total)
            if state.status != "running":
                return state
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, self.policy.max_poll_s)

    def _settle(self, batch: str, ids: list[str], results: list[LineResult], unreadable: int,
                state: BatchState) -> None:
        """Each reply to its call; a line for each kind of trouble; requests without a reply
        into the next wave."""
        sent = set(ids)
        found: dict[str, LineResult] = {}
        for result in results:
            if result.custom_id in sent:
                found.setdefault(result.custom_id, result)
        unknown = sum(1 for r in results if r.custom_id not in sent)
        order = [r.custom_id for r in results if r.custom_id in sent and r.status != 0]
        if unknown:
            say(f"batch {batch}: {unknown} repl{'y' if unknown == 1 else 'ies'} for requests moot never sent "
                "(ignored)")
        if unreadable:
            say(f"batch {batch}: {unreadable} unreadable line(s) in its output (ignored)")
        if order != [i for i in ids if i in set(order)]:
            say(f"batch {batch}: its replies came back out of order (each matched to its request by id)")
        lost = [i for i in ids if found.get(i) is None or found[i].status == 0]
        if lost:
            why = state.status if state.status in ("expired", "cancelled") else "missing from its output"
            say(f"batch {batch} ({why}): {len(lost)} of {len(ids)} requests came back without a reply; "
                "they go into the next wave")
        for custom_id in ids:
            if custom_id not in lost:
                self._resolve(found[custom_id])
        self._requeue(lost)

    def _requeue(self, lost: list[str]) -> None:
        for custom_id in lost:
            self._lost[custom_id] += 1
            request = self._asked.get(custom_id)
            if request is None:
                continue
            if self._lost[custom_id] > LOST_WAVES:
                self._resolve(LineResult(custom_id, 0, error=f"no reply from {LOST_WAVES + 1} batches"))
            else:
                self._queue[custom_id] = request
        self._kick()

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for task in list(self._tasks.values()):
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        for api in self._apis.values():
            await api.close()


def rejected(exc: BaseException) -> BatchRejected:
    return BatchRejected(f"the provider refused a batch ({describe(exc)})", 0, status_of(exc))
