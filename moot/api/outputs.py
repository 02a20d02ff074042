"""What is made from saved runs: re-scored copies, readable documents, reports.

- `rescore` re-runs a protocol's deciding roles with other models on a saved run, into a new run
  folder (or transcript file); the original is untouched (moot.engine.rescore).
- `document` / `export`: a run as one Markdown or HTML document; everything a model or a dataset
  wrote is shown as text (escaped in HTML, neutralised in Markdown).
- `report`: the report folder of finished runs of any protocols (moot.report.build); no model is
  called.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Mapping, Optional, Sequence, Union

from moot.api.options import PathLike, RunOptions, backend_options, key_items, reply_cache
from moot.api.running import blocking, check_priced, retry_policy
from moot.api.saved import RunLike, RunsLike, SavedRun, each_run, open_run
from moot.errors import UsageError, nearest

if TYPE_CHECKING:
    from moot.contract.registry import AnyProtocol
    from moot.engine.rescore import Job, UnitRescored
    from moot.saved.source import RunSource
    from moot.log.transcript import Transcript
    from moot.metrics.classification import MetricReport
    from moot.models.budget import Budget
    from moot.models.cache import NoCache, ReplyCache
    from moot.models.calls import RetryPolicy
    from moot.models.engine import EngineStats, ModelEngine
    from moot.models.provider import BackendOptions
    from moot.report.build import Built

Format = Literal["md", "html"]
SUFFIXES: Mapping[str, str] = {"md": ".md", "html": ".html"}
Roles = Union[str, Sequence[str], Mapping[str, str]]  # SPEC (every deciding role) | {ROLE: SPEC} | ["ROLE=SPEC"]


# --- documents ----------------------------------------------------------------------------------

def document(run: RunLike, format: Format = "html", unit: Optional[str] = None) -> str:
    """The run as one document: its only unit, or for a batch a contents list and a section per
    unit (`unit`: that one only)."""
    return _document(_with_units(run), format, unit)


def _document(source: "RunSource", format: Format, unit: Optional[str]) -> str:
    from moot.contract.registry import view_of
    from moot.views.html import render_html
    from moot.views.markdown import render_markdown

    units = [source.unit(unit)] if unit is not None else source.units
    transcripts = [u.load() for u in units]
    record = source.record
    protocol = transcripts[0].protocol if transcripts else record.protocol_name or ""
    title = f"{source.name} ({protocol}, {len(transcripts)} units)"
    facts = [("Run folder", str(source.path)), ("Protocol", protocol), ("Units", str(len(transcripts)))]
    facts += [(k, v) for k, v in (("scenario_path", record.scenario_path), ("dataset_path", record.dataset_path),
                                  ("created", record.created), ("last_invoked", record.last_invoked)) if v]
    render = render_markdown if format == "md" else render_html
    return render(transcripts, [view_of(t.started) for t in transcripts], title, facts)


def export(run: RunLike, format: Optional[Format] = None, out: Optional[PathLike] = None,
           unit: Optional[str] = None) -> Path:
    """Write `document(run, format, unit)` to `out` (default: beside the run, RUN.html / RUN.md;
    `format` defaults to `out`'s suffix, else html); returns where it was written."""
    from moot.safety.diskio import is_environment_error, write_atomic
    from moot.safety.places import usable_out

    chosen = choose_format(format, out)
    source = _with_units(run)
    text = _document(source, chosen, unit)
    path = usable_out(Path(out) if out is not None else default_document(source, unit, SUFFIXES[chosen]), "file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    except OSError as exc:
        if is_environment_error(exc):
            raise
        raise UsageError(f"--out {path}: cannot write: {exc.strerror or exc}") from None
    return path


SUFFIX_FORMATS: Mapping[str, Format] = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", "": "html"}


def choose_format(fmt: Optional[str], out: Optional[PathLike]) -> Format:
    """The format asked for (html or md: anything else is refused), else the one `out`'s suffix
    names (none: html); a suffix that names neither is refused rather than given the other's text."""
    if fmt:
        if fmt not in SUFFIXES:
            raise UsageError(f"format {fmt!r}: moot writes html or md documents")
        return "md" if fmt == "md" else "html"
    suffix = Path(out).suffix.lower() if out is not None else ""
    if suffix not in SUFFIX_FORMATS:
        raise UsageError(f"{out}: moot writes html or md documents, not {suffix}: name the file .html or .md, "
                         "or give the format")
    return SUFFIX_FORMATS[suffix]


def default_document(source: "RunSource", unit: Optional[str], suffix: str) -> Path:
    if not source.is_folder:
        return source.path.with_suffix(suffix)
    name = source.path.name + (f"-{unit}" if unit else "")
    return source.path.with_name(name + suffix)


def _with_units(run: RunLike) -> "RunSource":
    """The run's source; a run without any transcript yet has nothing to show."""
    from moot.saved.files import RunFolderError

    source = open_run(run).source
    if not source.units:
        raise RunFolderError(f"{source.path}: the run has no transcripts yet")
    return source


# --- reports ------------------------------------------------------------------------------------

def write_report(runs: RunsLike, out: Optional[PathLike] = None) -> "Built":
    """The report folder of finished runs (default reports/report-TIME): report.md, CSV tables,
    plots; `.main` is its main tables as Markdown. A folder holding run folders counts as each."""
    from moot.report.build import build_report

    folder = Path(out) if out is not None else report_folder()
    return build_report([run.path if isinstance(run, SavedRun) else Path(run) for run in each_run(runs)], folder)


def report_folder() -> Path:
    """A report's default folder: reports/report-TIME."""
    return Path("reports") / f"report-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


# --- re-scoring ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rescoring:
    """What re-scoring gave: where it went, each unit's result, the calls it made."""

    out: Path  # the new run folder, or the new transcript file
    is_folder: bool
    roles: Mapping[str, str]
    units: Sequence["UnitRescored"]
    stats: "EngineStats"
    labels: Sequence[str] = ()  # the run's labels (run.json)
    metric: Optional[str] = None  # its headline metric (run.json)

    @property
    def stopped(self) -> str:
        """The one line saying why the rescoring stopped early and how to go on ("" if it did not):
        e.g. the cost limit reached. A folder's rerun redoes it, answering the calls already paid
        for from its reply cache; a transcript file is not continued."""
        first = next((r for r in self.units if r.stop), None)
        if first is None:
            return ""
        if not first.continues:
            return f"stopped early: {first.stop} (no retry can mend this; fix it and run again)"
        if self.is_folder:
            return (f"stopped early: {first.stop} ({first.continues}; the calls already paid for are answered "
                    "from the folder's reply cache)")
        return f"stopped early: {first.stop} ({first.continues}, into another --out: a transcript file starts anew)"

    @property
    def failed(self) -> bool:
        """A unit could not be rescored (a folder: a rescoring call failed; a file: no result)."""
        if self.is_folder:
            return any(r.failed.startswith("rescoring failed") for r in self.units)
        return any(bool(r.failed) and r.row is None for r in self.units)

    @property
    def labelled(self) -> list[Mapping[str, Any]]:
        """The results rows of the labelled units rescored (with their original prediction)."""
        return [r.row for r in self.units if r.row and r.row.get("gold") is not None and "original_prediction" in r.row]

    def scores(self) -> list[tuple[str, "MetricReport"]]:
        """The run's metric ("before", "after") over its labelled units rescored; none without labels."""
        from moot.metrics.classification import summarize

        scored = self.labelled
        if not (scored and self.labels):
            return []
        return [(name, summarize([r["gold"] for r in scored], [r[key] for r in scored], self.labels,
                                 metric=self.metric or "macro_f1"))
                for name, key in (("before", "original_prediction"), ("after", "prediction"))]


def roles_of(protocol: "AnyProtocol", items: Sequence[str]) -> dict[str, str]:
    """ROLE=SPEC items (a bare SPEC: every deciding role) as {role: spec}, each checked."""
    if not protocol.deciders:
        raise UsageError(f"{protocol.name} has no deciding role that `score` can re-run")
    if not items:
        raise UsageError(f"give --role ROLE=SPEC (ROLE one of {', '.join(protocol.deciders)}) or --model SPEC")
    roles: dict[str, str] = {}
    for item in items:
        role, sep, spec = item.partition("=")
        if not sep:  # a bare SPEC: every deciding role
            roles.update({decider: check_spec(item, item) for decider in protocol.deciders})
            continue
        if role not in protocol.deciders:
            raise UsageError(f"--role {item}: expected ROLE=SPEC with ROLE one of {', '.join(protocol.deciders)} "
                             f"({protocol.name}){nearest(role, protocol.deciders)}")
        roles[role] = check_spec(item, spec)
    return roles


def check_spec(item: str, spec: str) -> str:
    from moot.models.spec import parse_spec

    try:
        parse_spec(spec)
    except ValueError as exc:
        raise UsageError(f"--role {item}: {exc}") from None
    return spec.strip()


def slug(roles: Mapping[str, str]) -> str:
    return "-".join(re.sub(r"[^A-Za-z0-9._-]+", "_", f"{role}-{spec}") for role, spec in roles.items())


def rescore(run: RunLike, roles: Roles, *, out: Optional[PathLike] = None, every: bool = False,
            options: Optional[RunOptions] = None, budget: Optional["Budget"] = None) -> Rescoring:
    """Re-run the run's deciding roles with other models (`{"judger": "openai:gpt-4o"}`, or one
    SPEC for every deciding role); nobody else is asked again. A run folder is copied to `out`
    (default RUN-rescored-ROLE-SPEC; running the same again redoes it from that folder's reply
    cache), a transcript file to one new file (default NAME.rescored.jsonl). `every` also
    re-decides units the protocol decided without those roles. Its calls are priced like a run's
    (`options.prices`; a folder's run.json keeps its `spend_usd`) and `options.max_cost` stops it
    resumably (`Rescoring.stopped`); `budget`: a cost limit shared with other work instead (an
    experiment's)."""
    from moot.engine.rescore import Job, recorded_scenario
    from moot.models.factory import preflight
    from moot.protocols.registry import REGISTRY

    options = options or RunOptions()
    source = open_run(run).source
    first = next((u.load() for u in source.units), None)
    if first is None:
        raise UsageError(f"{source.path}: the run has no transcripts to rescore")
    protocol = REGISTRY.get(first.protocol) if first.protocol in REGISTRY else None
    if protocol is None:
        raise UsageError(f"{first.path}: unknown protocol {first.protocol!r}")
    chosen = roles_of(protocol, key_items(roles))
    scenario = recorded_scenario(protocol, first, source.record)
    backends = backend_options(options, scenario.backends)
    check_priced(chosen.values(), backends, options)
    if options.clients is None:
        preflight(chosen.values(), backends)
    job = Job(protocol, chosen, every, source.record)
    if source.is_folder:
        return _rescore_folder(source, first, job, out, options, backends, retry_policy(scenario), budget)
    return _rescore_file(source, first, job, out, options, backends, retry_policy(scenario), budget)


def _rescore_file(source: "RunSource", transcript: "Transcript", job: "Job", out: Optional[PathLike],
                  options: RunOptions, backends: "BackendOptions", retry: "RetryPolicy",
                  budget: Optional["Budget"]) -> Rescoring:
    from moot.models.cache import NoCache

    path = Path(out) if out is not None else source.path.with_suffix(".rescored.jsonl")
    if path.exists():
        raise UsageError(f"--out {path}: file exists; choose another path")
    engine = rescoring_engine(options, backends, retry, NoCache(), budget)
    results = blocking(lambda: _rescore(job, [(transcript, None, path)], engine, options.concurrency))
    return Rescoring(path, False, job.roles, results, engine.stats)


def _rescore_folder(source: "RunSource", first: "Transcript", job: "Job", out: Optional[PathLike],
                    options: RunOptions, backends: "BackendOptions", retry: "RetryPolicy",
                    budget: Optional["Budget"]) -> Rescoring:
    """`first`: the first unit's transcript, loaded already to learn the protocol."""
    from moot.engine.folder import RunFolder
    from moot.saved.files import RunFolderError
    from moot.engine.meta import record_session
    from moot.engine.rescore import clear, unit_path
    from moot.models.budget import Budget

    path = Path(out) if out is not None else source.path.with_name(f"{source.path.name}-rescored-{slug(job.roles)}")
    with RunFolder(path) as folder:
        meta = rescored_meta(source, job, path)
        before = folder.meta()
        if before is not None or folder.results_path.exists():
            if not same_job(before, meta):
                raise RunFolderError(f"--out {path}: holds another run; choose another --out")
            clear(path)  # an earlier invocation of this same rescoring: redo it, answering from its cache
        spent = folder.record().spent  # what its earlier invocations paid
        folder.write_meta({**meta, "spend_usd": spent} if spent else meta)
        units = [(first, source.units[0].row)] + [(u.load(), u.row) for u in source.units[1:]]
        work = [(t, row, unit_path(path, t)) for t, row in units]
        engine = rescoring_engine(options, backends, retry, reply_cache(options, folder.cache_path),
                                  budget or Budget(options.max_cost, spent))
        try:
            results = blocking(lambda: _rescore(job, work, engine, 2 * options.concurrency))
        finally:
            record_session(folder, engine.stats)  # its spend, and how each endpoint paced
        for result in results:
            if result.row is not None:
                folder.append_result(result.row)
    return Rescoring(path, True, job.roles, results, engine.stats, source.record.labels or (), source.record.headline)


def rescoring_engine(options: RunOptions, backends: "BackendOptions", retry: "RetryPolicy",
                     cache: "ReplyCache | NoCache", budget: Optional["Budget"]) -> "ModelEngine":
    """The engine that sends the rescoring's calls, each priced, within its budget (default:
    `--max-cost` for this rescoring alone)."""
    from moot.models.budget import Budget
    from moot.models.engine import ModelEngine
    from moot.models.prices import Prices

    return ModelEngine(backends, cache=cache, retry=retry, concurrency=options.concurrency, clients=options.clients,
                       prices=options.prices or Prices(), budget=budget or Budget(options.max_cost))


async def _rescore(job: "Job", work: Sequence[tuple["Transcript", Optional[dict[str, Any]], Path]],
                   engine: "ModelEngine", in_flight: int) -> list["UnitRescored"]:
    from moot.engine.rescore import rescore_units

    try:
        return await rescore_units(job, work, engine, in_flight)
    finally:
        await engine.close()


def rescored_meta(source: "RunSource", job: "Job", out: Path) -> dict[str, Any]:
    """run.json of the new folder: the original's (but for what its invocations spent and how they
    paced: the copy records its own), with the new models, where it came from and what the
    rescoring ran on (`rescoring_environment`, moot.engine.provenance)."""
    from moot.engine.meta import now
    from moot.engine.provenance import environment

    meta: dict[str, Any] = json.loads(json.dumps(source.meta))
    for invoked in ("spend_usd", "pacing"):
        meta.pop(invoked, None)
    meta["models"] = {**(source.record.models or {}), **job.roles}
    meta["rescored"] = {"from": str(source.path.resolve()), "roles": dict(job.roles), "every": job.every}
    meta["created"] = meta["last_invoked"] = now()
    meta["rescoring_environment"] = environment(dict(job.roles))
    return meta


def same_job(before: Optional[Mapping[str, Any]], meta: Mapping[str, Any]) -> bool:
    return before is not None and before.get("rescored") == meta["rescored"]
