"""`moot annotate RUN --browser`: a rater's blind session on a page of a server of its own.

The session is the terminal's (moot.engine.rating: what is left for this rater, each thing asked
as a seat's turn, each rated thing appended to the run's annotations file). Its questions are put
on one live page in the look of a seat's page (moot.viewer.seats: the same question form, the
allowed answers as buttons, 1-10 for a score, a text box for the rater's name): the material the
model decided on above, the question below, and once a thing is rated the model's answers beside
the rater's. While a thing is asked, the page holds none of the model's answers to it.

- Binds 127.0.0.1 unless told otherwise. Every request needs the token printed with the link (in
  the URL once, then a same-site cookie named for the port); on a loopback address a request whose
  Host is not that address is refused (DNS rebinding), as the viewer does.
- An answer is a form post from the page itself (moot.viewer.server.from_own_page) naming the
  question it answers; one to a question no longer asked is refused (409) and changes nothing.
- It writes one file, the run's annotations file, through the session; it serves no file of the
  run and takes no path from a request.
- Every response has the viewer's security headers (no inline script or style, no framing), and
  everything shown is escaped with control sequences stripped (the templates' `plain`).
- Once everything is rated the page says so, and the server stops a moment after showing it (its
  static files load); a stop signal stops it at any time (what was rated is kept, and the same
  command goes on).
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional, TextIO

from aiohttp import web
from jinja2 import Environment

from moot.engine.rating import Revealed, Todo, left_to_rate, session
from moot.kit.seats import Asking, Question
from moot.saved.source import RunSource
from moot.errors import EXIT_ENVIRONMENT, EXIT_OK, MootError
from moot.log.annotations import FILE, annotations_path
from moot.safety.signals import exit_code, headline
from moot.viewer.links import ServerLinks
from moot.viewer.live import POLL_S, stream_regions
from moot.viewer.pages import environment, render, with_regions
from moot.viewer.seats import MAX_ANSWER, NotAsked
from moot.viewer.server import (
    LOOPBACK, MAX_BODY, STATIC, Handler, address_link, bound_port, from_own_page, handled, loopback_hosts, new_token,
    static_text, with_headers,
)
from moot.safety.neutral import terminal_safe

BRAND = "moot annotate"
MOVE_S = 5.0  # how long an answer's post waits for the page to move on, so the page it leads to is the next
LINGER_S = 3.0  # how long the server stays after the closing page was shown (its static files load)


class CannotServe(MootError):
    """The address cannot be served on (in use, not this machine's)."""

    exit_code = EXIT_ENVIRONMENT


@dataclass(frozen=True)
class Now:
    """What the page shows now: replaced whole at each change (`version`), so a page rendered in
    a worker thread reads one consistent state."""

    version: int = 0
    state: str = "starting"  # starting | asking | done
    id: str = ""  # the question asked now (an answer names it)
    asking: Optional[Asking] = None
    question: Optional[Question] = None
    problem: str = ""
    todo: Optional[Todo] = None
    last: Optional[Revealed] = None
    rated: int = 0


class PagePerson:
    """A rater answering on the rating page: the session asks (`ask`), the page shows `now`, the
    page's post answers (`answer`). Its terminal (`out`) says what is left and when all is rated."""

    def __init__(self, run: RunSource, out: Optional[TextIO] = None):
        self.run, self.out = run, out or sys.stdout
        self.now = Now()
        self._answer: Optional[asyncio.Future[str]] = None
        self.changed = asyncio.Event()  # set at the next change (then replaced)
        self.done_seen = threading.Event()  # the closing page was shown

    def _show(self, **change: Any) -> None:
        self.now = replace(self.now, version=self.now.version + 1, **change)
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    async def ask(self, asking: Asking, question: Question, problem: str) -> str:
        self._answer = asyncio.get_running_loop().create_future()
        self._show(state="asking", id=secrets.token_hex(8), asking=asking, question=question, problem=problem)
        return await self._answer

    def answer(self, asked: str, text: str) -> None:
        """The page's answer to the question `asked` (NotAsked: it is not the one asked now)."""
        if len(text) > MAX_ANSWER:
            raise NotAsked(f"an answer is at most {MAX_ANSWER} characters")
        waiting = self._answer
        if self.now.state != "asking" or asked != self.now.id or waiting is None or waiting.done():
            raise NotAsked("this question was answered already, or is no longer asked")
        waiting.set_result(text.replace("\r\n", "\n"))

    def begin(self, todo: Todo) -> None:
        self._show(todo=todo)
        self._say(f"{len(todo.things)} thing(s) to rate in {self.run.path} as {todo.rater} "
                  f"({todo.before} rated before), in the browser")

    def revealed(self, done: Revealed, number: int, count: int) -> None:
        self._show(last=done, rated=self.now.rated + 1)

    def finish(self) -> None:
        self._show(state="done", id="", asking=None, question=None, problem="")
        self._say(f"all rated: annotations: {annotations_path(self.run.path)}")

    def _say(self, text: str) -> None:
        self.out.write(terminal_safe(text) + "\n")
        self.out.flush()


def panel_context(now: Now) -> dict[str, Any]:
    """The question form's and the panel's values (the seat's form: `pending`, `asked`, `kind`, `scores`)."""
    question, asking = now.question, now.asking
    scale = question.scale if question is not None and question.scale else (1, 10)
    todo = now.todo
    questions = asking.questions if asking else ()
    step = f"question {questions.index(question) + 1} of {len(questions)}" \
        if question in questions and len(questions) > 1 else ""
    return dict(state=now.state, rater=todo.rater if todo else "", where=asking.where if asking else "", step=step,
                thing=asking.action if asking else "", material=asking.shown if asking else "",
                problem=now.problem, pending={"id": now.id}, asked=question.as_dict() if question else {},
                kind=question.kind if question else "text", scores=list(range(scale[0], scale[1] + 1)),
                action="/", last=now.last, rated=now.rated, before=todo.before if todo else 0, file=FILE)


class RatingPage:
    """The page's requests (see the module docstring): the page, its live updates, its answers,
    the static files, behind the token."""

    def __init__(self, person: PagePerson, token: str, env: Optional[Environment] = None):
        self.person, self.token = person, token
        self.env = env or environment()
        self.links = ServerLinks()
        self.hosts: Optional[set[str]] = None  # a loopback server's Host headers (None: any, with the token)
        self.cookie = "moot_annotate"
        self.executor = ThreadPoolExecutor(2, thread_name_prefix="moot-annotate")

    def regions(self) -> dict[str, str]:
        context = panel_context(self.person.now)
        if context["state"] == "done":
            self.person.done_seen.set()
        return {"rating-shown": render(self.env, "_rating_shown.html", self.links, **context),
                "seat-panel": render(self.env, "_rating_panel.html", self.links, **context)}

    def page(self) -> str:
        regions = self.regions()
        done = self.person.now.state == "done"
        return with_regions(self.env, "rate.html", self.links, regions, run=self.person.run.name, brand=BRAND,
                            live=None if done else "/events", title=f"Rate {self.person.run.name}")

    def error(self, status: int, message: str) -> web.Response:
        html = render(self.env, "error.html", self.links, status=status, message=message, back="/",
                      back_label="Back to the rating page", brand=BRAND, live=None, title=f"Error {status}")
        return web.Response(status=status, text=html, content_type="text/html", headers={"Cache-Control": "no-store"})

    @web.middleware
    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The token on every request, the loopback Host, the security headers on every response."""
        given = request.query.get("token") or request.cookies.get(self.cookie) or ""
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return with_headers(web.Response(status=401, text=f"{BRAND}: this page needs the link printed at start"))
        if self.hosts is not None and request.host not in self.hosts:
            return with_headers(web.Response(status=421, text=f"{BRAND} answers on its loopback address only"))
        return await handled(request, handler, self.cookie, self.token)

    async def get_page(self, request: web.Request) -> web.Response:
        html = await asyncio.get_running_loop().run_in_executor(self.executor, self.page)
        return web.Response(text=html, content_type="text/html", headers={"Cache-Control": "no-store"})

    async def post_answer(self, request: web.Request) -> web.StreamResponse:
        if not from_own_page(request):
            return self.error(403, "an answer is taken only from the rating page itself")
        form = await request.post()
        asked, text = form.get("asked"), form.get("text")
        if not isinstance(asked, str) or not isinstance(text, str):
            return self.error(400, "an answer needs the question it answers and its text")
        changed = self.person.changed
        try:
            self.person.answer(asked, text)
        except NotAsked as exc:
            return self.error(409, str(exc))
        try:
            await asyncio.wait_for(changed.wait(), MOVE_S)  # the page it leads to asks the next question
        except asyncio.TimeoutError:
            pass  # its live updates will
        raise web.HTTPSeeOther("/")

    async def events(self, request: web.Request) -> web.StreamResponse:
        person = self.person
        return await stream_regions(request, self.executor, lambda: person.now.version, self.regions, POLL_S)

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in STATIC:
            return self.error(404, f"no static file {name!r}")
        return web.Response(text=static_text(name), content_type=STATIC[name], headers={"Cache-Control": "no-cache"})

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self.guard], client_max_size=MAX_BODY)
        app.router.add_get("/", self.get_page)
        app.router.add_post("/", self.post_answer)
        app.router.add_get("/events", self.events)
        app.router.add_get("/static/{name}", self.static)
        return app


def serve(source: RunSource, rater: Optional[str], limit: Optional[int], host: str, port: int,
          open_link: Optional[Callable[[str], object]] = None, out: Optional[TextIO] = None) -> int:
    """Rate `source` in the browser until everything left is rated or a stop signal; the exit code."""
    shown = out or sys.stdout
    todo = left_to_rate(source, rater.strip(), limit) if rater is not None else None
    if todo is not None and not todo.things:
        shown.write(terminal_safe(f"0 thing(s) to rate in {source.path} as {todo.rater} "
                                  f"({todo.before} rated before)") + "\n")
        return EXIT_OK
    return asyncio.run(_serving(source, rater, limit, todo, host, port, open_link, shown))


async def _serving(source: RunSource, rater: Optional[str], limit: Optional[int], todo: Optional[Todo], host: str,
                   port: int, open_link: Optional[Callable[[str], object]], out: TextIO) -> int:
    person = PagePerson(source, out)
    page = RatingPage(person, new_token())
    runner = web.AppRunner(page.app(), access_log=None)
    await runner.setup()
    stopped: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    try:
        bound = await _listen(runner, host, port)
        page.cookie = f"moot_annotate_{bound}"
        if host in LOOPBACK:
            page.hosts = loopback_hosts(host, bound)
        link = address_link(host, bound, f"token={page.token}")
        out.write(f"moot annotate: rate {terminal_safe(source.path)} blind at {link}\n"
                  "moot annotate: Ctrl-C stops it (what you rated is kept; the same command goes on)\n")
        out.flush()
        if open_link is not None:
            open_link(link)
        _on_stop_signals(stopped)
        rating: asyncio.Future[Todo] = asyncio.ensure_future(session(source, rater, limit, person, todo))
        either: list[asyncio.Future[Any]] = [rating, stopped]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not rating.done():
            rating.cancel()
            return _interrupted(stopped.result(), person)
        rating.result()
        person.finish()
        while not person.done_seen.is_set() and not stopped.done():
            await asyncio.sleep(0.1)
        if not stopped.done():
            await asyncio.sleep(LINGER_S)
        return EXIT_OK
    finally:
        await runner.cleanup()
        page.executor.shutdown(wait=False, cancel_futures=True)


async def _listen(runner: web.AppRunner, host: str, port: int) -> int:
    try:
        await web.TCPSite(runner, host, port, shutdown_timeout=0.2).start()
    except OSError as exc:
        raise CannotServe(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    return bound_port(runner, port)


def _on_stop_signals(stopped: asyncio.Future[int]) -> None:
    """Ctrl-C, SIGTERM, SIGHUP: `stopped` holds the signal's number."""
    def stop(signum: int) -> None:
        if not stopped.done():
            stopped.set_result(signum)

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stop, int(sig))


def _interrupted(signum: int, person: PagePerson) -> int:
    print(terminal_safe(f"{headline(signum)}: the {person.now.rated} rated now are kept in "
                        f"{annotations_path(person.run.path)}; the same command goes on from there"), file=sys.stderr)
    return exit_code(signum)
