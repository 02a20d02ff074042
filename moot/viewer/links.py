"""Where each page of the viewer is: a URL of the server, or a file of a static bundle.

The templates ask a `Links` for every address, so the same pages serve both: `ServerLinks` gives
absolute URL paths with query strings; `BundleLinks` gives file paths relative to the page being
written (a bundle opens from disk, file://, with no server). A bundle holds one page per filter
(filters do not combine there) and no live updates; the bundle writer (moot.viewer.bundle) writes
the files these functions name.
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Optional
from urllib.parse import urlencode

from moot.viewer.compare import COMPARE_FILTERS
from moot.viewer.paths import quote_name, url_path
from moot.viewer.units import Query

Rel = PurePosixPath


def query_string(values: dict[str, object]) -> str:
    shown = {k: v for k, v in values.items() if v not in ("", None, 1, "all")}
    return ("?" + urlencode(shown, errors="surrogateescape")) if shown else ""  # names as their bytes (paths)


def query_values(query: Query) -> dict[str, object]:
    return {"show": query.show, "gold": query.gold, "target": query.target, "q": query.q, "page": query.page}


class Links:
    """Addresses of pages (see the module docstring)."""

    bundle = False

    def runs(self) -> str:
        raise NotImplementedError

    def run(self, rel: Rel, query: Query = Query()) -> str:
        raise NotImplementedError

    def experiment(self, rel: Rel) -> str:
        raise NotImplementedError

    def narrow(self, query: Query, **change: object) -> Query:
        """The query a filter link leads to: the current one changed (a server), or the filter alone."""
        return query.changed(**change)

    def unit(self, rel: Rel, key: str) -> str:
        raise NotImplementedError

    def calls(self, rel: Rel, key: str) -> str:
        raise NotImplementedError

    def call(self, rel: Rel, key: str, seq: int) -> Optional[str]:
        """An HTML fragment of one call (fetched when its toggle opens); None: follow `calls`."""
        return None

    def scenario(self, rel: Rel) -> str:
        raise NotImplementedError

    def compare(self, a: Rel, b: Rel, query: Query = Query()) -> Optional[str]:
        raise NotImplementedError

    def compare_unit(self, a: Rel, b: Rel, pair: str) -> Optional[str]:
        raise NotImplementedError

    def static(self, name: str) -> str:
        raise NotImplementedError

    def events(self, kind: str, rel: Optional[Rel] = None, key: str = "", query: Query = Query()) -> Optional[str]:
        """The server-sent events of a live page; None: no live updates (a bundle)."""
        return None

    def seat(self, token: str) -> Optional[str]:
        """A person's seat page (moot.viewer.seats); None: no seats (a bundle never holds a token)."""
        return None

    def seat_events(self, token: str) -> Optional[str]:
        return None


class ServerLinks(Links):
    def runs(self) -> str:
        return "/"

    def run(self, rel: Rel, query: Query = Query()) -> str:
        return f"/run/{url_path(rel)}" + query_string(query_values(query))

    def experiment(self, rel: Rel) -> str:
        return f"/experiment/{url_path(rel)}"

    def unit(self, rel: Rel, key: str) -> str:
        return f"/unit/{url_path(rel)}?u={quote_name(key)}"

    def calls(self, rel: Rel, key: str) -> str:
        return f"/calls/{url_path(rel)}?u={quote_name(key)}"

    def call(self, rel: Rel, key: str, seq: int) -> Optional[str]:
        return f"/call/{url_path(rel)}?u={quote_name(key)}&seq={seq}"

    def scenario(self, rel: Rel) -> str:
        return f"/scenario/{url_path(rel)}"

    def compare(self, a: Rel, b: Rel, query: Query = Query()) -> Optional[str]:
        return "/compare" + query_string({"a": a.as_posix(), "b": b.as_posix(), **query_values(query)})

    def compare_unit(self, a: Rel, b: Rel, pair: str) -> Optional[str]:
        return "/compare-unit" + query_string({"a": a.as_posix(), "b": b.as_posix(), "pair": pair})

    def static(self, name: str) -> str:
        return f"/static/{name}"

    def events(self, kind: str, rel: Optional[Rel] = None, key: str = "", query: Query = Query()) -> Optional[str]:
        where = f"/{url_path(rel)}" if rel is not None else ""
        return f"/events/{kind}{where}" + query_string({"u": key, **query_values(query)})

    def seat(self, token: str) -> Optional[str]:
        return f"/seat/{token}"

    def seat_events(self, token: str) -> Optional[str]:
        return f"/events/seat/{token}"


def short(text: str) -> str:
    """A file-name-safe stand-in for any text (a label, a target, a pair key)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def query_file(query: Query) -> str:
    """The file of a run page (or a comparison page) for one filter and page."""
    if query.gold:
        name = f"gold-{short(query.gold)}"
    elif query.target:
        name = f"target-{short(query.target)}"
    elif query.show != "all":
        name = f"show-{query.show}"
    else:
        name = "index"
    return name + (f"-p{query.page}" if query.page > 1 else "") + ".html"


@dataclass
class BundleLinks(Links):
    """Links of one page of a bundle (`here`: its file, relative to the bundle's top)."""

    here: PurePosixPath
    pairs: dict[tuple[Rel, Rel], str] = field(default_factory=dict)  # comparisons the bundle holds -> folder

    bundle = True

    def _to(self, target: str) -> str:
        relative = posixpath.relpath(target, posixpath.dirname(self.here.as_posix()) or ".")
        return "/".join(quote_name(part) if part not in (".", "..") else part for part in relative.split("/"))

    def narrow(self, query: Query, **change: object) -> Query:
        return Query().changed(**change)

    def runs(self) -> str:
        return self._to("index.html")

    def run(self, rel: Rel, query: Query = Query()) -> str:
        return self._to(run_file(rel, query))

    def experiment(self, rel: Rel) -> str:
        return self._to(experiment_file(rel))

    def unit(self, rel: Rel, key: str) -> str:
        return self._to(f"{run_folder(rel)}/u/{key}.html")

    def calls(self, rel: Rel, key: str) -> str:
        return self._to(f"{run_folder(rel)}/u/{key}.calls.html")

    def scenario(self, rel: Rel) -> str:
        return self._to(f"{run_folder(rel)}/scenario.html")

    def compare(self, a: Rel, b: Rel, query: Query = Query()) -> Optional[str]:
        folder = self.pairs.get((a, b))
        if folder is None:
            return None
        return self._to(compare_file(folder, query))

    def compare_unit(self, a: Rel, b: Rel, pair: str) -> Optional[str]:
        folder = self.pairs.get((a, b))
        return self._to(f"{folder}/u/{short(pair)}.html") if folder is not None else None

    def static(self, name: str) -> str:
        return self._to(f"static/{name}")


def run_folder(rel: Rel) -> str:
    return posixpath.join("r", *rel.parts) if rel.parts else "r/_"


def run_file(rel: Rel, query: Query = Query()) -> str:
    return f"{run_folder(rel)}/{query_file(query)}"


def experiment_file(rel: Rel) -> str:
    return posixpath.join("e", *rel.parts, "index.html") if rel.parts else "e/_/index.html"


def compare_file(folder: str, query: Query) -> str:
    """The file of a comparison page for one filter and page (no filter: its first, as the server)."""
    show = query.show if query.show in COMPARE_FILTERS else next(iter(COMPARE_FILTERS))
    return f"{folder}/show-{show}" + (f"-p{query.page}" if query.page > 1 else "") + ".html"
