"""Every page of the viewer, server-rendered from Jinja templates with autoescaping: the runs list,
a run, a unit, its model calls, its scenario, and comparisons. The server (moot.viewer.server) and
the bundle (moot.viewer.bundle) call the same methods with their own `Links`; a live page's
regions are re-rendered by the same templates when its files change (moot.viewer.live).

Everything read from a run is passed to the templates as data and escaped there, but the unit's
conversation, which moot.views.html renders (escaping every string) and is marked safe.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Mapping, Optional, Sequence

import yaml
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from moot.saved.files import RunFolderError
from moot.saved.seatfiles import seat_links
from moot.errors import MootError
from moot.safety.diskio import open_regular
from moot.log.events import TranscriptError
from moot.log.transcript import Transcript, load
from moot.viewer import compare as comparing
from moot.viewer.catalog import EXPERIMENT, STATUSES, Catalog, RunSummary, stamps
from moot.viewer.figures import Intervals
from moot.viewer.links import Links
from moot.viewer.paths import Refused, Root, shown
from moot.viewer.unitpage import call_html, calls_toggle, content, live_turn
from moot.viewer.units import Indexer, Query, RunTable, open_table, select, targets
from moot.safety.neutral import plain
from moot.views.summary import stop_reason
from moot.views.timeline import speaker_index


META_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            "base-uri 'none'; form-action 'self'")  # a bundle's pages carry it (no server sends a header)
CSP = META_CSP + "; frame-ancestors 'none'"  # the server's header (a <meta> cannot forbid framing)


class NotFound(MootError, ValueError):
    """No such page (a run, a unit or a call that is not there)."""


@dataclass(frozen=True)
class RunFilters:
    """What the runs list shows: a name search, a protocol, a model, a status."""

    q: str = ""
    protocol: str = ""
    model: str = ""
    status: str = ""

    def keep(self, run: RunSummary) -> bool:
        return ((not self.q or self.q.lower() in f"{run.name} {run.title} {run.scenario}".lower())
                and (not self.protocol or run.protocol == self.protocol)
                and (not self.model or self.model in run.models)
                and (not self.status or run.status == self.status))


def environment() -> Environment:
    env = Environment(loader=PackageLoader("moot.viewer", "templates"), autoescape=select_autoescape(default=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, finalize=shown_value)
    env.filters["seconds"] = seconds_text
    env.filters["plain"] = plain  # a person's or a model's text: control sequences out (escaped after)
    return env


def shown_value(value: Any) -> Any:
    """Every value a template writes: a text holding a name that is not UTF-8 (moot.viewer.paths)
    written with `\\x` escapes, never failing the page."""
    if not isinstance(value, str):
        return value
    return Markup(shown(value)) if isinstance(value, Markup) else shown(value)  # (no escape adds markup)


def seconds_text(value: Optional[float]) -> str:
    if value is None:
        return "—"
    if value < 90:
        return f"{value:.1f} s"
    if value < 5400:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"


def render(env: Environment, template: str, links: Links, **context: Any) -> str:
    return env.get_template(template).render(links=links, statuses=STATUSES, csp=META_CSP, **context)


def with_regions(env: Environment, template: str, links: Links, regions: dict[str, str], **context: Any) -> str:
    """A page whose live regions are rendered apart (each with its hash: a live update that would
    change nothing is not applied)."""
    return render(env, template, links, regions={k: Markup(v) for k, v in regions.items()},
                  hashes={k: region_hash(v) for k, v in regions.items()}, **context)


@dataclass
class Pages:
    """The viewer's pages over one folder (see the module docstring)."""

    root: Root
    inline: bool = False  # every interval computed with its page (the bundle), none in the background
    catalog: Catalog = field(init=False)
    indexer: Indexer = field(default_factory=Indexer)
    env: Environment = field(default_factory=environment)
    _tables: dict[Path, tuple[tuple[Any, ...], RunTable]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.catalog = Catalog(self.root, Intervals(self.inline))

    def close(self) -> None:
        """Stop the background work (facts, intervals)."""
        self.indexer.close()
        self.catalog.intervals.close()

    def render(self, template: str, links: Links, **context: Any) -> str:
        return render(self.env, template, links, **context)

    def with_regions(self, template: str, links: Links, regions: dict[str, str], **context: Any) -> str:
        return with_regions(self.env, template, links, regions, **context)

    # ------------------------------------------------------------------ the runs list
    def runs_page(self, links: Links, filters: RunFilters = RunFilters()) -> str:
        runs = self.catalog.runs()
        return self.with_regions("runs.html", links, self.runs_regions(links, filters, runs), filters=filters,
                                 protocols=sorted({r.protocol for r in runs}), models=sorted({r.models for r in runs}),
                                 live=links.events("runs"), title="Runs")

    def runs_regions(self, links: Links, filters: RunFilters = RunFilters(),
                     runs: Optional[list[RunSummary]] = None) -> dict[str, str]:
        runs = self.catalog.runs() if runs is None else runs
        shown = [r for r in runs if filters.keep(r)]
        found = {"runs": self.render("_runs_table.html", links, runs=shown, every=runs)}
        experiments = self.catalog.experiments(runs)
        if experiments:
            found["experiments"] = self.render("_experiments.html", links, experiments=experiments)
        return found

    # ------------------------------------------------------------------ an experiment
    def is_experiment(self, rel: PurePosixPath) -> bool:
        return (self.root.file(rel) / EXPERIMENT).is_file()

    def experiment_page(self, links: Links, rel: PurePosixPath) -> str:
        """An experiment's findings as `moot report` computes them, its cells and its comparisons."""
        if not self.is_experiment(rel):
            raise NotFound(f"not an experiment: {rel}")
        found = self.catalog.experiment(rel, self.catalog.runs())
        return self.render("experiment.html", links, experiment=found, reference=found.base,
                           others=[a for a in found.arms if a != found.base], live=None, title=found.title)

    # ------------------------------------------------------------------ a run
    def run_path(self, rel: PurePosixPath) -> Path:
        path = self.root.file(rel)
        if not (path.is_dir() or path.suffix == ".jsonl"):
            raise NotFound(f"not a run: {rel}")
        return path

    def table(self, rel: PurePosixPath) -> tuple[Path, RunTable]:
        """The run's table, kept while its files are unchanged."""
        path = self.run_path(rel)
        stamp = stamps(path, path.is_dir())
        with self._lock:
            cached = self._tables.get(path)
        if cached is not None and cached[0] == stamp:
            return path, cached[1]
        try:
            found = open_table(path, self.indexer)
        except RunFolderError as exc:
            raise NotFound(str(exc)) from None
        with self._lock:
            self._tables[path] = (stamp, found)
        return path, found

    def summary(self, rel: PurePosixPath, path: Path) -> RunSummary:
        experiment = next((p.as_posix() for p in rel.parents if (self.root.path / p / EXPERIMENT).is_file()), "")
        return self.catalog.summary(path, path.is_dir(), experiment)

    def run_context(self, links: Links, rel: PurePosixPath, query: Query) -> dict[str, Any]:
        path, table = self.table(rel)
        page = select(table, query, self.indexer)
        report = table.report()
        peers = [r for r in self.catalog.runs() if r.protocol == table.protocol and r.rel != rel]
        summary = self.summary(rel, path)
        return dict(rel=rel, table=table, query=query, page=page, report=report, summary=summary,
                    seats=seat_links(path) if path.is_dir() and summary.status == "running" else [],
                    filters=table.filters, golds=table.golds(), targets=targets(table, self.indexer), peers=peers,
                    chart=f1_chart(report.per_class_f1) if report else None,
                    heat=heat(report.confusion) if report else {})

    def run_page(self, links: Links, rel: PurePosixPath, query: Query = Query()) -> str:
        if self.is_experiment(rel):  # /run/EXPERIMENT: the experiment's page
            return self.experiment_page(links, rel)
        context = self.run_context(links, rel, query)
        return self.with_regions("run.html", links, self.run_regions(links, rel, query, context), **context,
                                 live=links.events("run", rel, query=query),
                                 title=context["summary"].title or rel.as_posix())

    def run_regions(self, links: Links, rel: PurePosixPath, query: Query,
                    context: Optional[dict[str, Any]] = None) -> dict[str, str]:
        context = self.run_context(links, rel, query) if context is None else context
        return {"run-head": self.render("_run_head.html", links, **context),
                "units": self.render("_units_table.html", links, **context)}

    # ------------------------------------------------------------------ a unit
    def transcript(self, rel: PurePosixPath, key: str) -> tuple[RunTable, Path, Transcript]:
        _, table = self.table(rel)
        ref = table.refs.get(key)
        if ref is None:
            raise NotFound(f"no unit {key!r} in {rel}")
        return table, ref.path, load(ref.path)

    def neighbours(self, table: RunTable, key: str) -> tuple[Optional[str], Optional[str]]:
        keys = [r.key for r in table.rows]
        at = keys.index(key) if key in keys else -1
        before = keys[at - 1] if at > 0 else None
        after = keys[at + 1] if 0 <= at < len(keys) - 1 else None
        return before, after

    def unit_context(self, links: Links, rel: PurePosixPath, key: str) -> dict[str, Any]:
        path = self.run_path(rel)
        _, table = self.table(rel)
        ref = table.refs.get(key)
        if ref is None:
            raise NotFound(f"no unit {key!r} in {rel}")
        summary = self.summary(rel, path)
        before, after = self.neighbours(table, key)
        base = dict(rel=rel, key=key, unit=ref, table=table, summary=summary, before=before, after=after,
                    seats=seat_links(path) if path.is_dir() and summary.status == "running" else [])
        try:
            transcript = load(ref.path)
        except TranscriptError as exc:
            return {**base, "damaged": str(exc), "excerpt": damaged_excerpt(ref.path, str(exc))}
        running = summary.status == "running"
        shown = content(transcript, links, rel, key, running)
        speakers = speaker_index(transcript, shown.view)
        turn = live_turn(ref.path, shown.view, speakers) if running else None
        return {**base, "damaged": "", "shown": shown, "header": Markup(shown.header),
                "timeline": Markup(shown.timeline), "turn": Markup(turn) if turn else None,
                "stray": Markup(calls_toggle(links, rel, key, shown.stray, "calls-other")) if shown.stray else None,
                "torn": transcript.torn_tail, "finished": transcript.finished,
                "running": running and transcript.finished is None,
                "reason": stop_reason(transcript.finished) if transcript.finished else ""}

    def unit_page(self, links: Links, rel: PurePosixPath, key: str) -> str:
        context = self.unit_context(links, rel, key)
        title = context["shown"].title if "shown" in context else key
        return self.with_regions("unit.html", links, self.unit_regions(links, rel, key, context), **context,
                                 live=links.events("unit", rel, key), title=title)

    def unit_regions(self, links: Links, rel: PurePosixPath, key: str,
                     context: Optional[dict[str, Any]] = None) -> dict[str, str]:
        context = self.unit_context(links, rel, key) if context is None else context
        return {"unit-body": self.render("_unit_body.html", links, **context)}

    def calls_page(self, links: Links, rel: PurePosixPath, key: str) -> str:
        _, _, transcript = self.transcript(rel, key)
        calls = [Markup(call_html(c)) for c in transcript.calls]
        return self.render("calls.html", links, rel=rel, key=key, calls=calls, live=None,
                           title=f"Model calls of {transcript.started.unit or key}")

    def call_fragment(self, rel: PurePosixPath, key: str, seq: int) -> str:
        _, _, transcript = self.transcript(rel, key)
        found = next((c for c in transcript.calls if c.seq == seq), None)
        if found is None:
            raise NotFound(f"no call {seq} in {key}")
        return call_html(found)

    def scenario_page(self, links: Links, rel: PurePosixPath) -> str:
        """What ran: the scenario as recorded, and each role's first prompt as it was sent."""
        path, table = self.table(rel)
        scenario = table.source.record.scenario
        prompts: list[tuple[str, list[tuple[str, str]]]] = []
        first = table.rows[0].key if table.rows else None
        if first is not None:
            try:
                transcript = load(table.refs[first].path)
            except TranscriptError:
                transcript = None
            if transcript is not None:
                scenario = scenario or transcript.started.scenario
                prompts = first_prompts(transcript)
        text = yaml.safe_dump(scenario, sort_keys=False, allow_unicode=True, width=100) if scenario else ""
        return self.render("scenario.html", links, rel=rel, summary=self.summary(rel, path), scenario=text,
                           prompts=prompts, first=first, live=None, title=f"Scenario of {rel.as_posix() or '.'}")

    # ------------------------------------------------------------------ comparisons
    def side(self, rel: PurePosixPath) -> list[comparing.Member]:
        """A run, or every run below a folder (an experiment's arm)."""
        path = self.root.file(rel)
        if path.is_file() or (path / "run.json").exists() or (path / "results.jsonl").exists():
            return [comparing.Member(PurePosixPath(), path, self.table(rel)[1])]
        members = []
        for found, _, _ in self.catalog.walk():
            if path in found.parents:
                sub = PurePosixPath(found.relative_to(path).as_posix())
                members.append(comparing.Member(sub, found, self.table(self.root.rel_of(found))[1]))
        if not members:
            raise NotFound(f"no run under {rel}")
        return sorted(members, key=lambda m: m.sub)

    def compare_context(self, a: PurePosixPath, b: PurePosixPath) -> dict[str, Any]:
        left, right = self.side(a), self.side(b)
        found = comparing.pairs(left, right)
        return dict(a=a, b=b, left=left, right=right, found=found, figures=comparing.figures(found),
                    result_name=left[0].table.result_name)

    def compare_page(self, links: Links, a: PurePosixPath, b: PurePosixPath, query: Query = Query()) -> str:
        context = self.compare_context(a, b)
        show = query.show if query.show in comparing.COMPARE_FILTERS else "differ"
        page = comparing.select(context["found"], show, query.page)
        return self.render("compare.html", links, **context, query=query.changed(show=show, page=page.page),
                           page=page, filters=comparing.COMPARE_FILTERS, live=None,
                           title=f"{a.as_posix()} vs {b.as_posix()}")

    def compare_unit_page(self, links: Links, a: PurePosixPath, b: PurePosixPath, pair: str) -> str:
        context = self.compare_context(a, b)
        found = next((p for p in context["found"] if p.key == pair), None)
        if found is None:
            raise NotFound(f"no unit {pair!r} in both runs")
        sides: list[tuple[str, Optional[PurePosixPath], Optional[dict[str, Any]]]] = []
        for side, member_row in (("a", found.a), ("b", found.b)):
            if member_row is None:
                sides.append((side, None, None))
                continue
            member, row = member_row
            rel = self.root.rel_of(member.path)
            sides.append((side, rel, self.unit_context(links, rel, row.key)))
        return self.render("compare_unit.html", links, a=a, b=b, pair=pair, sides=sides, live=None,
                           title=f"{pair}: {a.as_posix()} vs {b.as_posix()}")

    def error_page(self, links: Links, status: int, message: str, back: str = "") -> str:
        """An error's page; `back`: where to go back to (else the runs)."""
        return self.render("error.html", links, status=status, message=message, back=back, live=None,
                           title=f"Error {status}")


def region_hash(html: str) -> str:
    return hashlib.sha1(html.encode("utf-8")).hexdigest()[:16]


def damaged_excerpt(path: Path, error: str) -> list[tuple[int, str, bool]]:
    """The lines around the damaged one the error names (`FILE:LINE: ...`), cut to 300 characters."""
    head = error.split(": ", 1)[0]
    number = head.rsplit(":", 1)[-1]
    if not number.isdigit():
        return []
    line = int(number)
    shown = []
    with open_regular(path) as f:
        for n, raw in enumerate(f, 1):
            if n > line + 1:
                break
            if n >= line - 1:
                text = raw.decode("utf-8", "replace").rstrip("\n")
                shown.append((n, text[:300] + ("…" if len(text) > 300 else ""), n == line))
    return shown


def first_prompts(transcript: Transcript) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each role's first call's messages as sent (role, [(kind, text)])."""
    seen: dict[str, list[tuple[str, str]]] = {}
    for call in transcript.calls:
        if call.role not in seen:
            seen[call.role] = [(str(m.get("type") or m.get("role") or "message"),
                                m["content"] if isinstance(m.get("content"), str) else json.dumps(m.get("content")))
                               for m in call.messages]
    return list(seen.items())


def f1_chart(per_class: Mapping[str, float]) -> list[tuple[str, float, int]]:
    """Per-class F1 as (label, value, percent)."""
    return [(label, value, round(100 * value)) for label, value in per_class.items()]


def heat(confusion: Mapping[str, Mapping[str, int]]) -> dict[tuple[str, str], int]:
    """Each confusion cell's shade 0-9 (its share of its gold row)."""
    shades = {}
    for gold, row in confusion.items():
        total = sum(row.values()) or 1
        for predicted, count in row.items():
            shades[(gold, predicted)] = min(9, round(9 * count / total))
    return shades


def parse_query(values: Mapping[str, str]) -> Query:
    try:
        page = int(values.get("page", "1"))
    except ValueError:
        page = 1
    return Query(values.get("show", "all"), values.get("gold", ""), values.get("target", ""), values.get("q", ""),
                 max(1, page))


def decoded_rel(root: Root, text: str) -> PurePosixPath:
    """A relative path given as a query value (already decoded): each segment checked."""
    from moot.viewer.paths import quote_name, segment

    parts = [p for p in text.strip("/").split("/") if p]
    for part in parts:
        segment(quote_name(part))  # the checks of a path segment (quoted from its bytes, it decodes to itself)
        if re.search("%[0-9A-Fa-f]{2}", part):  # a segment that decodes again (`%2F` written as `%252F`)
            raise Refused(f"refused path segment {part!r}")
    return PurePosixPath(*parts)


def regions_of(pages: Pages, links: Links, kind: str, rel: Optional[PurePosixPath], key: str,
               query: Query, filters: RunFilters) -> dict[str, str]:
    if kind == "runs":
        return pages.runs_regions(links, filters)
    assert rel is not None
    if kind == "run":
        return pages.run_regions(links, rel, query)
    return pages.unit_regions(links, rel, key)
