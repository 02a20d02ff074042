"""Live pages: server-sent events that re-render a page's regions when the files behind it change.

A stream polls the files its page reads — a unit's transcript and the run's live side file
(moot.engine.live), a run folder's listing, run.json and results.jsonl, every run's summary, or
a seat's files (moot.viewer.seats) — every POLL_S seconds (stat calls only), and when one changed it renders the page's regions again
with the same templates and sends those that differ (`event: regions`, a JSON object of region id
-> HTML). The transcript is read by the strict loader, which leaves a torn last line out: a line
being written shows as pending, never as an error. A stream ends when its client goes away or the
server stops.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import Executor
from pathlib import PurePosixPath
from typing import Any, Callable, Optional

from aiohttp import web

from moot.engine.folder import live_file
from moot.errors import MootError
from moot.viewer.catalog import RunSummary, stamps
from moot.viewer.links import Links
from moot.viewer.pages import NotFound, Pages, RunFilters, region_hash, regions_of
from moot.viewer.units import Query

POLL_S = 0.2
RUNS_POLL_S = 1.0
HEARTBEAT_S = 15.0


def event(name: str, data: str) -> bytes:
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return f"event: {name}\n{lines}\n".encode("utf-8")


def watched(pages: Pages, kind: str, rel: Optional[PurePosixPath], key: str) -> Callable[[], Any]:
    """What changes when the page should: file stamps (None for the runs list: render and compare)."""
    if kind == "runs" or rel is None:
        return lambda: None
    path = pages.run_path(rel)
    if kind == "run":
        return lambda: (stamps(path, path.is_dir()), shown_state(pages.catalog.summary(path, path.is_dir())))
    _, table = pages.table(rel)
    ref = table.refs.get(key)
    if ref is None:
        raise NotFound(f"no unit {key!r} in {rel}")
    transcript = ref.path
    return lambda: (stamps(transcript, False), stamps(live_file(transcript), False),
                    pages.catalog.summary(path, path.is_dir()).status)


def shown_state(summary: RunSummary) -> tuple[str, bool]:
    """What a run's page shows beyond its files: its status, and whether its headline's interval is
    still being computed (moot.viewer.figures.Intervals)."""
    return summary.status, summary.headline is not None and summary.headline.pending


async def stream(request: web.Request, pages: Pages, links: Links, executor: Executor, kind: str,
                 rel: Optional[PurePosixPath], key: str, query: Query, filters: RunFilters) -> web.StreamResponse:
    loop = asyncio.get_running_loop()
    stamp_of = await loop.run_in_executor(executor, watched, pages, kind, rel, key)
    return await stream_regions(request, executor, stamp_of,
                                lambda: regions_of(pages, links, kind, rel, key, query, filters),
                                RUNS_POLL_S if kind == "runs" else POLL_S)


async def stream_regions(request: web.Request, executor: Executor, stamp_of: Callable[[], Any],
                         render: Callable[[], dict[str, str]], poll: float) -> web.StreamResponse:
    """A page's live regions: `render()` again whenever `stamp_of()` changes (or always, when it
    is None), the regions that differ sent as one `regions` event."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8",
                                           "Cache-Control": "no-store", "X-Accel-Buffering": "no"})
    await response.prepare(request)
    try:
        await _send_regions(response, executor, stamp_of, render, poll)
    except ConnectionResetError:  # the page went away (a form sent, a tab closed)
        pass
    return response


async def _send_regions(response: web.StreamResponse, executor: Executor, stamp_of: Callable[[], Any],
                        render: Callable[[], dict[str, str]], poll: float) -> None:
    loop = asyncio.get_running_loop()
    await response.write(b"retry: 1000\n\n" + event("state", "live"))
    sent: dict[str, str] = {}
    last: Any = object()
    quiet = 0.0
    while True:
        try:
            stamp = await loop.run_in_executor(executor, stamp_of)
        except (MootError, OSError) as exc:
            await response.write(event("state", f"stopped: {exc}"))
            return
        if stamp != last or stamp is None:
            last = stamp
            try:
                regions = await loop.run_in_executor(executor, render)
            except (MootError, OSError, ValueError) as exc:
                regions = {}
                await response.write(event("state", f"unreadable: {exc}"))
            changed = {k: (region_hash(v), v) for k, v in regions.items() if sent.get(k) != v}
            if changed:  # the first time too (the page may have changed since it was served; the
                await response.write(event("regions", json.dumps(changed)))  # client skips equal hashes)
                quiet = 0.0
            sent.update(regions)
        await asyncio.sleep(poll)
        quiet += poll
        if quiet >= HEARTBEAT_S:
            await response.write(b": ping\n\n")
            quiet = 0.0
