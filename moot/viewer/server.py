"""The viewer's web server (aiohttp): read-only pages of the runs under one folder.

- Binds 127.0.0.1 unless told otherwise; on any other address every request needs the token
  printed at start (in the URL once, then a same-site cookie). Without a token, a request whose
  Host is not this loopback address is refused (a web page elsewhere cannot reach the viewer
  through DNS rebinding).
- Every page is a GET route (HEAD too); any other method is answered 405 by the router, but one:
  a person's answer at a seat (POST /seat/TOKEN, moot.viewer.seats), which passes the same guard
  and must come from this server's own page (`from_own_page`). Nothing is ever written under the folder
  but that answer, as the seat's answer file (moot.saved.seatfiles), atomically.
- A seat's link (/seat/TOKEN, its live updates and its answers) is opened by the seat's own
  token, which the run folder holds: on a token-protected address it needs no viewer token, and
  it opens nothing else (but the static files, by a same-site cookie holding the seat's token).
- Paths are parsed from the raw URL (moot.viewer.paths): `..`, encoded separators, hidden names and
  symbolic links are refused with 403, unknown pages 404.
- Every response forbids inline scripts and styles (Content-Security-Policy), framing and sniffing.
- Pages are rendered in worker threads, so live streams keep flowing while a large page renders.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import PurePosixPath
from typing import Awaitable, Callable, Optional
from urllib.parse import parse_qsl

from aiohttp import web

from moot.errors import MootError
from moot.log.events import TranscriptError
from moot.contract.registry import load_installed
from moot.viewer.links import Links, ServerLinks
from moot.viewer.live import POLL_S, stream, stream_regions
from moot.viewer.pages import CSP, NotFound, Pages, RunFilters, decoded_rel, parse_query
from moot.viewer.paths import Refused
from moot.viewer.seats import NotAsked, SeatAt, SeatIndex, seat_page, seat_regions, seat_stamp, take_answer
from moot.views.html import document_css

STATIC = {"viewer.css": "text/css", "viewer.js": "text/javascript", "document.css": "text/css"}
COOKIE = "moot_view_token"
SEAT_COOKIE = "moot_seat"  # a seat's token, sent for the static files only
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "X-Frame-Options": "DENY", "Cross-Origin-Opener-Policy": "same-origin",
           "Cross-Origin-Resource-Policy": "same-origin"}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
MAX_BODY = 2 ** 21  # a seat's answer (moot.viewer.seats.MAX_ANSWER characters, form-encoded); pages take none


def static_text(name: str) -> str:
    if name == "document.css":
        return document_css()
    return resources.files("moot.viewer").joinpath("static", name).read_text(encoding="utf-8")


def new_token() -> str:
    return secrets.token_urlsafe(24)


def with_headers(response: web.StreamResponse) -> web.StreamResponse:
    if not response.prepared:
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
    return response


async def handled(request: web.Request, handler: Handler, cookie: str, token: Optional[str]) -> web.StreamResponse:
    """`handler`'s response (the router's own errors, 404 or 405, as responses), with the token's
    cookie set when the token came in the URL, and the security headers."""
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        response = web.Response(status=exc.status, text=exc.text, headers=exc.headers)
    if token is not None and request.query.get("token") and not response.prepared:
        response.set_cookie(cookie, token, httponly=True, samesite="Strict")
    return with_headers(response)


def address_link(host: str, port: int, query: str = "") -> str:
    """The URL of a server on `host`:`port` (an IPv6 address in brackets), with `query`."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"?{query}" if query else "")


def query_of(request: web.Request) -> dict[str, str]:
    """The query's values, decoded as the links wrote them (moot.viewer.links: a name's bytes that
    are not UTF-8 stay escaped surrogates); a malformed escape is taken as it is written."""
    return dict(parse_qsl(request.rel_url.raw_query_string, keep_blank_values=True, errors="surrogateescape"))


def split(raw_path: str) -> tuple[str, str]:
    """(page kind, the raw rest) of a request's raw path: `/unit/a/b` -> ("unit", "a/b")."""
    path = raw_path.split("?", 1)[0].lstrip("/")
    kind, _, rest = path.partition("/")
    return kind, rest


class Viewer:
    """The request handlers (one per page kind) over `pages`, and what guards them: the token (None:
    loopback only) and the Host headers a loopback viewer answers."""

    def __init__(self, pages: Pages, token: Optional[str] = None, workers: int = 4):
        self.pages, self.token = pages, token
        self.hosts: set[str] = set()
        self.links: Links = ServerLinks()
        self.executor = ThreadPoolExecutor(workers, thread_name_prefix="moot-view")
        self.streams: set[asyncio.Task[object]] = set()
        self.seats = SeatIndex(pages.catalog)

    @web.middleware
    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Loopback-or-token, and the security headers on every response (the router's own errors too).
        A seat's pages check the seat's token themselves (module docstring)."""
        if self.token is not None and not await self.admitted(request):
            return with_headers(web.Response(status=401,
                                             text="moot view: this address needs the token printed at start"))
        if self.token is None and request.host not in self.hosts:
            return with_headers(web.Response(status=421, text="moot view answers on its loopback address only"))
        return await handled(request, handler, COOKIE, self.token)

    async def admitted(self, request: web.Request) -> bool:
        """On a token-protected address: the viewer's token, or a seat's route (its handlers check
        the seat's token), or a static file asked by a seat's page (its cookie)."""
        given = request.query.get("token") or request.cookies.get(COOKIE) or ""
        if hmac.compare_digest(given.encode(), self.token.encode() if self.token else b""):
            return True
        kind, rest = split(request.raw_path)
        if kind == "seat" or (kind == "events" and rest.startswith("seat/")):
            return True
        seat = request.cookies.get(SEAT_COOKIE, "")
        return kind == "static" and bool(seat) and await self.find_seat(seat) is not None

    async def stop_streams(self, app: web.Application) -> None:
        for task in list(self.streams):
            task.cancel()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        kind, rest = split(request.raw_path)
        try:
            return await self.dispatch(request, kind, rest)
        except Refused as exc:
            return await self.error(403, str(exc))
        except (NotFound, FileNotFoundError) as exc:
            return await self.error(404, str(exc))
        except (MootError, TranscriptError) as exc:  # a damaged file: one line naming it
            return await self.error(422, str(exc))
        except (OSError, ValueError) as exc:
            return await self.error(500, str(exc))

    async def dispatch(self, request: web.Request, kind: str, rest: str) -> web.StreamResponse:
        pages, links, query = self.pages, self.links, query_of(request)
        if kind == "static":
            if rest not in STATIC:
                raise NotFound(f"no static file {rest!r}")
            return web.Response(text=static_text(rest), content_type=STATIC[rest],
                                headers={"Cache-Control": "no-cache"})
        if kind == "":
            filters = RunFilters(query.get("q", ""), query.get("protocol", ""), query.get("model", ""),
                                 query.get("status", ""))
            return await self.page(pages.runs_page, links, filters)
        if kind in ("compare", "compare-unit"):
            a, b = decoded_rel(pages.root, query.get("a", "")), decoded_rel(pages.root, query.get("b", ""))
            if kind == "compare":
                return await self.page(pages.compare_page, links, a, b, parse_query(query))
            return await self.page(pages.compare_unit_page, links, a, b, query.get("pair", ""))
        if kind == "events":
            return await self.events(request, rest)
        if kind == "seat":
            at = await self.seat(rest)
            response = await self.page(seat_page, self.pages, links, at)
            response.set_cookie(SEAT_COOKIE, at.token, httponly=True, samesite="Strict", path="/static/")
            return response
        rel = pages.root.relative(rest)
        key = query.get("u", "")
        if kind == "run":
            return await self.page(pages.run_page, links, rel, parse_query(query))
        if kind == "experiment":
            return await self.page(pages.experiment_page, links, rel)
        if kind == "unit":
            return await self.page(pages.unit_page, links, rel, key)
        if kind == "calls":
            return await self.page(pages.calls_page, links, rel, key)
        if kind == "call":
            seq = int(query.get("seq", "0")) if query.get("seq", "0").isdigit() else 0
            return await self.page(pages.call_fragment, rel, key, seq)
        if kind == "scenario":
            return await self.page(pages.scenario_page, links, rel)
        raise NotFound(f"no page {kind!r}")

    async def page(self, render: Callable[..., str], *args: object) -> web.Response:
        html = await asyncio.get_running_loop().run_in_executor(self.executor, render, *args)
        return web.Response(text=html, content_type="text/html", headers={"Cache-Control": "no-store"})

    async def events(self, request: web.Request, rest: str) -> web.StreamResponse:
        kind, _, raw = rest.partition("/")
        if kind not in ("runs", "run", "unit", "seat"):
            raise NotFound(f"no live page {kind!r}")
        if kind == "seat":
            at = await self.seat(raw)
            pages, links = self.pages, self.links
            return await self.streaming(stream_regions(request, self.executor, lambda: seat_stamp(pages, at),
                                                       lambda: seat_regions(pages, links, at), POLL_S))
        rel = self.pages.root.relative(raw) if kind != "runs" else None
        query = query_of(request)
        filters = RunFilters(query.get("q", ""), query.get("protocol", ""), query.get("model", ""),
                             query.get("status", ""))
        return await self.streaming(stream(request, self.pages, self.links, self.executor, kind, rel,
                                           query.get("u", ""), parse_query(query), filters))

    async def streaming(self, streamed: Awaitable[web.StreamResponse]) -> web.StreamResponse:
        """A live page's stream, stopped with the server."""
        task = asyncio.current_task()
        if task is not None:
            self.streams.add(task)
        try:
            return await streamed
        except (ConnectionResetError, asyncio.CancelledError):
            return web.StreamResponse()
        finally:
            if task is not None:
                self.streams.discard(task)

    async def find_seat(self, token: str) -> Optional[SeatAt]:
        return await asyncio.get_running_loop().run_in_executor(self.executor, self.seats.find, token)

    async def seat(self, token: str) -> SeatAt:
        """The seat a token opens (NotFound: none under the folder)."""
        at = await self.find_seat(token)
        if at is None:
            raise NotFound("no seat has this link (its run may be in another folder, or its seat files were removed)")
        return at

    async def answer(self, request: web.Request) -> web.StreamResponse:
        """A person's answer at a seat (module docstring): written for the run, then back to the seat."""
        token = request.match_info["token"]
        try:
            at = await self.seat(token)
        except NotFound as exc:
            return await self.error(404, str(exc))
        if not from_own_page(request):
            return await self.error(403, "an answer is taken only from the seat's own page", self.links.seat(token))
        form = await request.post()
        asked, text = form.get("asked"), form.get("text")
        if not isinstance(asked, str) or not isinstance(text, str):
            return await self.error(400, "an answer needs the question it answers and its text", self.links.seat(token))
        try:
            await asyncio.get_running_loop().run_in_executor(self.executor, take_answer, self.pages, at, asked, text)
        except NotAsked as exc:
            return await self.error(409, str(exc), self.links.seat(token))
        raise web.HTTPSeeOther(self.links.seat(token) or "/")

    async def error(self, status: int, message: str, back: Optional[str] = None) -> web.Response:
        html = await asyncio.get_running_loop().run_in_executor(
            self.executor, self.pages.error_page, self.links, status, message, back or "")
        return web.Response(status=status, text=html, content_type="text/html", headers={"Cache-Control": "no-store"})


def make_app(pages: Pages, token: Optional[str] = None) -> tuple[web.Application, Viewer]:
    viewer = Viewer(pages, token)
    app = web.Application(middlewares=[viewer.guard], client_max_size=MAX_BODY)
    app.router.add_post("/seat/{token}", viewer.answer)
    app.router.add_get("/{tail:.*}", viewer.handle)
    app.on_shutdown.append(viewer.stop_streams)
    return app, viewer


def from_own_page(request: web.Request) -> bool:
    """A request a page of this server sent: its Origin is this server, or (a page that sends no
    referrer sends `Origin: null`) the browser says it is same-origin (Sec-Fetch-Site, which no
    page can forge)."""
    origin, own = request.headers.get("Origin"), f"{request.scheme}://{request.host}"
    if origin not in (None, "null", own):
        return False
    return origin == own or request.headers.get("Sec-Fetch-Site") == "same-origin"


def loopback_hosts(host: str, port: int) -> set[str]:
    """The Host headers a loopback-only viewer answers."""
    names = {host, "localhost", "127.0.0.1", "[::1]"}
    return {f"{name}:{port}" for name in names}


LOOPBACK = ("127.0.0.1", "localhost", "::1")


async def serve(pages: Pages, host: str, port: int, token: Optional[str], ready: Callable[[str], None],
                stop: asyncio.Event) -> None:
    """Serve until `stop` is set (Ctrl-C, SIGTERM, SIGHUP), then close every stream at once. The
    protocols are imported before the address is printed, and the runs summarised in the background
    right after, so the first page does not wait for either."""
    load_installed()
    app, viewer = make_app(pages, token)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, shutdown_timeout=0.2)
    await site.start()
    bound = bound_port(runner, port)
    viewer.hosts |= loopback_hosts(host, bound)
    ready(address_link(host, bound, f"token={token}" if token else ""))
    warming = asyncio.get_running_loop().run_in_executor(viewer.executor, pages.catalog.runs)
    warming.add_done_callback(lambda done: done.cancelled() or done.exception())  # a page will say what failed
    try:
        await stop.wait()
    finally:
        warming.cancel()
        await runner.cleanup()
        viewer.executor.shutdown(wait=False, cancel_futures=True)
        pages.close()


def bound_port(runner: web.AppRunner, asked: int) -> int:
    """The port the server listens on (a free one when 0 was asked)."""
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    return asked
