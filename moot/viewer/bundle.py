"""`moot view DIR --bundle OUT`: the viewer's pages as a static site, for a paper's supplement.

OUT holds index.html (the runs list), a page per experiment (e/...), a folder per run (its page
per filter and page, a page per unit with its calls page, the scenario page), comparisons of each
experiment's arms with its reference arm and of runs that share a protocol and a dataset, and the
style sheets and script; every link is relative, so the folder opens from disk (file://) or any
static host. Filters do not combine and nothing is live. Every transcript is
read (the facts behind the filters are complete). OUT is written whole or not at all
(moot.safety.fileset): an existing bundle is replaced only when everything in it is a bundle's.
A run or a unit that cannot be read (a damaged file) gets a page saying so in one line, in place of
its own, so every link of the bundle leads to a page; the rest is written as usual.
"""

from __future__ import annotations

from functools import partial
from itertools import combinations
from pathlib import Path, PurePosixPath
from typing import Callable

from moot.errors import MootError
from moot.log.events import TranscriptError
from moot.safety.diskio import open_regular
from moot.safety.fileset import file_set
from moot.viewer import compare as comparing
from moot.viewer.catalog import Experiment, RunSummary
from moot.viewer.links import BundleLinks, Links, Rel, compare_file, experiment_file, run_file, short
from moot.viewer.pages import NotFound, Pages
from moot.viewer.paths import Root
from moot.viewer.server import STATIC, static_text
from moot.viewer.units import Query, select, targets

OWNED = {"index.html", "static", "r", "e", "c"}
MAX_PAIRS = 40  # comparisons a bundle holds at most


def pairs_of(runs: list[RunSummary], experiments: list[Experiment]) -> dict[tuple[Rel, Rel], str]:
    """Comparisons worth writing (the first MAX_PAIRS): each arm of an experiment with its reference
    (the links of its page), then runs of one protocol on one dataset."""
    found: dict[tuple[Rel, Rel], str] = {}
    for experiment in experiments:
        for arm in experiment.arms:
            if arm != experiment.base and len(found) < MAX_PAIRS:
                found[(experiment.rel / experiment.base, experiment.rel / arm)] = f"c/{len(found) + 1}"
    folders = [r for r in runs if r.is_folder and not r.problem]
    for x, y in combinations(sorted(folders, key=lambda r: r.name), 2):
        if (x.protocol, x.dataset) == (y.protocol, y.dataset) and len(found) < MAX_PAIRS:
            found[(x.rel, y.rel)] = f"c/{len(found) + 1}"
    return found


def bundles(path: Path) -> bool:
    """Is `path` (a top name of an existing bundle folder) a bundle's, to be replaced whole: one of
    its names, and every file in it one of its pages or style files? A file of the user's anywhere
    in it (`r/paper.tex`, an index.html of their own) keeps the folder from being replaced."""
    if path.name not in OWNED:
        return False
    files = [path] if not path.is_dir() or path.is_symlink() else [p for p in path.rglob("*") if not p.is_dir()]
    return all(page_of_a_bundle(p) or (p.parent.name == "static" and p.name in STATIC) for p in files)


def page_of_a_bundle(path: Path) -> bool:
    if path.suffix != ".html" or path.is_symlink() or not path.is_file():
        return False
    with open_regular(path) as f:
        return b'http-equiv="Content-Security-Policy"' in f.read(4096)


class Writer:
    """Writes pages into the fresh bundle folder."""

    def __init__(self, pages: Pages, out: Path, pairs: dict[tuple[Rel, Rel], str]):
        self.pages, self.out, self.pairs = pages, out, pairs
        self.written = 0
        self.damaged: dict[str, None] = {}  # what could not be read, one line each (in order, once)

    def links(self, here: str) -> BundleLinks:
        return BundleLinks(PurePosixPath(here), self.pairs)

    def write(self, here: str, render: Callable[[Links], str]) -> None:
        links = self.links(here)
        try:
            html = render(links)
        except (MootError, TranscriptError) as exc:  # a damaged run or unit: its page says so
            self.damaged[str(exc)] = None
            html = self.pages.error_page(links, 422, str(exc))
        path = self.out / here
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")
        self.written += 1

    def unreadable(self, rel: Rel, problem: str) -> None:
        """A run that cannot be opened: its page (which the runs list links to) says why."""
        self.damaged[problem] = None
        self.write(run_file(rel), partial(self.pages.error_page, status=422, message=problem))

    def run(self, rel: Rel) -> None:
        pages = self.pages
        _, table = pages.table(rel)
        for ref in table.refs.values():
            pages.indexer.now(ref.path)
        queries = [Query(show=name) for name in table.filters] + [Query(gold=g) for g in table.golds()] \
            + [Query(target=t) for t in targets(table, pages.indexer)]
        for query in queries:
            for number in range(1, select(table, query, pages.indexer).pages + 1):
                paged = query.changed(show=query.show, page=number)
                self.write(run_file(rel, paged), partial(pages.run_page, rel=rel, query=paged))
        folder = run_file(rel).rsplit("/", 1)[0]
        for key in table.refs:
            self.write(f"{folder}/u/{key}.html", partial(pages.unit_page, rel=rel, key=key))
            self.write(f"{folder}/u/{key}.calls.html", partial(pages.calls_page, rel=rel, key=key))
        self.write(f"{folder}/scenario.html", partial(pages.scenario_page, rel=rel))

    def comparison(self, a: Rel, b: Rel, folder: str) -> None:
        pages = self.pages
        found = pages.compare_context(a, b)["found"]
        for show in comparing.COMPARE_FILTERS:
            for number in range(1, comparing.select(found, show, 1).pages + 1):
                query = Query(show=show, page=number)
                self.write(compare_file(folder, query), partial(pages.compare_page, a=a, b=b, query=query))
        for pair in found:
            if pair.both:
                self.write(f"{folder}/u/{short(pair.key)}.html",
                           partial(pages.compare_unit_page, a=a, b=b, pair=pair.key))


def write_bundle(folder: Path, out: Path) -> tuple[int, list[str]]:
    """Write the bundle; the number of pages written, and a line for each run or unit that could
    not be read (its page says so)."""
    pages = Pages(Root(folder), inline=True)
    try:
        runs = pages.catalog.runs()
        experiments = pages.catalog.experiments(runs)
        pairs = pairs_of(runs, experiments)
        with file_set(out, lambda name: bundles(out / name), kind="bundle") as fresh:
            (fresh / "static").mkdir()
            for name in STATIC:
                (fresh / "static" / name).write_text(static_text(name), encoding="utf-8")
            writer = Writer(pages, fresh, pairs)
            writer.write("index.html", pages.runs_page)
            for experiment in experiments:
                writer.write(experiment_file(experiment.rel), partial(pages.experiment_page, rel=experiment.rel))
            for run in runs:
                try:
                    writer.run(run.rel)
                except NotFound as exc:
                    writer.unreadable(run.rel, str(exc))
            for (a, b), where in pairs.items():
                writer.comparison(a, b, where)
            return writer.written, list(writer.damaged)
    finally:
        pages.close()
