"""How many calls one endpoint is sent at once, adapted to what it answers (AIMD).

A fixed number of calls in flight turns a server's rate limit into a storm of refusals, each a
retry. Here each endpoint has a limit between 1 and `--concurrency` (its ceiling), started at
the ceiling: every answer raises it by 1/limit (one more call per round of answers), an HTTP 429
or a timeout halves it (once per round: the calls that were already in flight when it was halved
do not halve it again). A 429's `Retry-After` pauses the whole endpoint, not only the call that
got it: no call is sent there before it has passed, so the server sees one pause instead of one
retry per call. A fast server's rate limit is a limit on requests per second, which calls in
flight do not bound (one call at a time can send hundreds a second): a 429 also sets a pace of
requests per second, the rate the server accepted in the second before it (less a tenth), spacing
requests evenly; each answer raises it by 1/rate (one more request a second, each second). The limit's course is kept (`Pace.record`: run.json's `pacing`) and the current
limit is shown on the status line.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Optional

from moot.models.calls import MAX_RETRY_AFTER_S, retry_after, status_of

MIN_RATE = 0.5  # requests per second a 429 slows an endpoint to, at the least
MAX_POINTS = 500  # the limit's course kept for run.json: its changes, up to this many


def congested(error: BaseException) -> bool:
    """An answer that asks for fewer calls: HTTP 429, or no answer in time."""
    return status_of(error) == 429 or isinstance(error, (asyncio.TimeoutError, TimeoutError))


class Pace:
    """One endpoint's limit on calls in flight (module docstring). `attempt()` holds a place for
    one request and learns from how it ended."""

    def __init__(self, ceiling: int, name: str = ""):
        self.ceiling, self.name = ceiling, name
        self.limit = float(ceiling)
        self.in_flight = 0
        self.paused_until = 0.0
        self.told = False  # the current pause was told on stderr
        self.started = time.monotonic()
        self.last_cut = self.started  # calls sent before it do not cut the limit again
        self.lowest = ceiling
        self.throttled = self.timeouts = self.cuts = 0
        self.course: list[tuple[float, int]] = [(0.0, ceiling)]
        self.rate: Optional[float] = None  # requests per second, once a 429 set it
        self.next_send = 0.0  # when the rate lets the next request go
        self.answered: deque[float] = deque()  # when the answers of the last second came
        self._changed = asyncio.Event()

    @property
    def current(self) -> int:
        """Calls that may be in flight now."""
        return max(1, int(self.limit))

    async def _enter(self) -> float:
        """Wait for a place (and the end of a pause); when it was taken."""
        while True:
            wait = self.paused_until - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            if self.in_flight < self.current:
                self.in_flight += 1
                return await self._spaced()
            self._changed.clear()
            await self._changed.wait()

    async def _spaced(self) -> float:
        """Wait for this request's time at the rate (none before a 429); when it goes."""
        now = time.monotonic()
        if self.rate is None:
            return now
        at = max(now, self.next_send)
        self.next_send = at + 1 / self.rate
        if at > now:
            await asyncio.sleep(at - now)
        return at

    @asynccontextmanager
    async def attempt(self) -> AsyncIterator[None]:
        """One request's place: taken when the limit allows, given back with what its end says."""
        sent = await self._enter()
        try:
            yield
        except BaseException as exc:
            self._leave(sent, exc)
            raise
        self._leave(sent, None)

    def _leave(self, sent: float, error: Optional[BaseException]) -> None:
        self.in_flight -= 1
        if error is None:
            self.limit = min(float(self.ceiling), self.limit + 1 / self.limit)
            self._answered()
        elif congested(error):
            self._slow_down(sent, error)
        self._note()
        self._changed.set()

    def _slow_down(self, sent: float, error: BaseException) -> None:
        now = time.monotonic()
        if status_of(error) == 429:
            self.throttled += 1
            if sent >= self.last_cut:
                self.rate = max(MIN_RATE, 0.9 * len(self._window(now)))
            asked = retry_after(error)
            asked = min(asked, MAX_RETRY_AFTER_S) if asked is not None else None
            if asked is not None and now + asked > self.paused_until:
                self.told = self.told and self.paused_until >= now  # a new pause is told anew
                self.paused_until = now + asked
        else:
            self.timeouts += 1
        if sent >= self.last_cut:  # once per round of calls
            self.limit = max(1.0, self.limit / 2)
            self.last_cut, self.cuts = now, self.cuts + 1
            self.lowest = min(self.lowest, self.current)

    def first_to_wait(self) -> bool:
        """True for the first call to wait out the current pause (moot.models.calls says so)."""
        first, self.told = not self.told, True
        return first

    def _answered(self) -> None:
        now = time.monotonic()
        self._window(now).append(now)
        if self.rate is not None:
            self.rate += 1 / self.rate

    def _window(self, now: float) -> deque[float]:
        """The answers of the last second."""
        while self.answered and self.answered[0] < now - 1:
            self.answered.popleft()
        return self.answered

    def _note(self) -> None:
        if self.current != self.course[-1][1] and len(self.course) < MAX_POINTS:
            self.course.append((round(time.monotonic() - self.started, 2), self.current))

    @property
    def adapted(self) -> bool:
        """Whether the endpoint ever asked for fewer calls."""
        return bool(self.throttled or self.timeouts)

    def text(self) -> str:
        """`12/32@18/s`: calls allowed in flight now of the ceiling, and the rate once a 429 set one."""
        return f"{self.current}/{self.ceiling}" + (f"@{self.rate:.0f}/s" if self.rate is not None else "")

    def record(self) -> dict[str, Any]:
        """What run.json keeps of the endpoint's pace: ceiling, lowest and last limit, the last rate
        (requests per second; null: never limited), 429s, timeouts, cuts and the limit's course
        as [seconds, limit] pairs."""
        return {"ceiling": self.ceiling, "lowest": self.lowest, "last": self.current,
                "rate": round(self.rate, 2) if self.rate is not None else None, "throttled": self.throttled,
                "timeouts": self.timeouts, "cuts": self.cuts, "course": [list(p) for p in self.course]}
