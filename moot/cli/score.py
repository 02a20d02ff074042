"""`moot score RUN --role ROLE=SPEC [--out PATH]`: re-run a protocol's deciding role with another model.

Nobody else is asked again: the protocol re-runs only its deciding roles on what the run recorded
(a conference: `evaluator` re-evaluates each topic, `grader` grades each judge decision as in
Heller et al. Table 5, `assessor` re-measures each topic's reference coverage; COLA: the `judger` on its recorded prompt; S2MAD: the `judge`; negotiation:
the `third` LLM's vote on conflicting items; judge-eval: the `judge`). The original is untouched:

- a run folder is copied to a new run folder (default RUN-rescored-ROLE-SPEC) with the new calls,
  messages and outcomes appended to each transcript's copy and the new predictions in its
  results.jsonl, beside the original ones (`moot report RUN RUN-rescored-...` shows both);
  running the same command again redoes it from the new folder's reply cache;
- a transcript file is copied to one new file (default NAME.rescored.jsonl).

`--every` also re-decides units the protocol decided without that role (S2MAD items settled by the
debaters' consensus, negotiation items without a conflict); by default they keep their result, as
the protocol would have given it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from moot.cli import EXIT_FAILED, EXIT_OK
from moot.cli.options import Parser, add_backends, add_engine, add_model, add_out, backend_options
from moot.metrics.classification import summarize
from moot.models.cache import NoCache, ReplyCache
from moot.models.calls import RetryPolicy
from moot.models.factory import BackendOptions
from moot.models.engine import ModelEngine
from moot.models.preflight import preflight
from moot.models.spec import parse_spec
from moot.contract.protocol import Protocol
from moot.protocols.registry import REGISTRY
from moot.engine.folder import RunFolder, RunFolderError
from moot.engine.meta import now
from moot.engine.rescore import Job, UnitRescored, clear, recorded_scenario, rescore_units, unit_path
from moot.errors import UsageError, nearest
from moot.engine.source import RunSource, open_run
from moot.views.neutral import terminal_safe
from moot.log.transcript import Transcript


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot score", description=__doc__.splitlines()[0],
               epilog="examples:\n  moot score transcripts/drug_policy --role grader=openai:gpt-4o\n"
                      "  moot score transcripts/cola-vast --role judger=ollama:llama3.1",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="run folder or transcript file")
    p.add_argument("--role", action="append", default=[], metavar="ROLE=SPEC",
                   help="a deciding role of the run's protocol and the model that re-runs it (repeatable)")
    add_model(p, help="the same as --role ROLE=SPEC; a bare SPEC re-runs every deciding role with it")
    add_out(p, "new run folder (default RUN-rescored-ROLE-SPEC), or new transcript file for a transcript "
               "(default NAME.rescored.jsonl)")
    p.add_argument("--every", action="store_true",
                   help="also re-decide units the protocol decided without the role (e.g. S2MAD consensus)")
    add_engine(p)
    add_backends(p)
    return p


def roles_of(protocol: Protocol[Any], items: Sequence[str]) -> dict[str, str]:
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
    try:
        parse_spec(spec)
    except ValueError as exc:
        raise UsageError(f"--role {item}: {exc}") from None
    return spec.strip()


def slug(roles: Mapping[str, str]) -> str:
    return "-".join(re.sub(r"[^A-Za-z0-9._-]+", "_", f"{role}-{spec}") for role, spec in roles.items())


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    source = open_run(args.run)
    first = next((u.load() for u in source.units), None)
    if first is None:
        raise UsageError(f"{source.path}: the run has no transcripts to rescore")
    protocol = REGISTRY.get(first.protocol) if first.protocol in REGISTRY else None
    if protocol is None:
        raise UsageError(f"{first.path}: unknown protocol {first.protocol!r}")
    roles = roles_of(protocol, args.role + args.model)
    scenario = recorded_scenario(protocol, first, source.meta)
    options = backend_options(args, getattr(scenario, "backends", None))
    preflight(roles.values(), options)
    job = Job(protocol, roles, args.every, source.meta)
    retry = getattr(scenario, "retry", None)
    policy = RetryPolicy(retry.attempts, retry.backoff_s, retry.timeout_s) if retry else RetryPolicy()
    if source.is_folder:
        return score_folder(source, first, job, args, options, policy)
    return score_file(source, first, job, args, options, policy)


def score_file(source: RunSource, transcript: Transcript, job: Job, args: argparse.Namespace,
               options: BackendOptions, retry: RetryPolicy) -> int:
    out = Path(args.out) if args.out else source.path.with_suffix(".rescored.jsonl")
    if out.exists():
        raise UsageError(f"--out {out}: file exists; choose another path")
    engine = ModelEngine(options, cache=NoCache(), retry=retry, concurrency=args.concurrency)
    results = asyncio.run(_rescore(job, [(transcript, None, out)], engine, args.concurrency))
    show(results, job, many=False)
    print(f"transcript: {out}")
    return EXIT_FAILED if any(r.failed and r.row is None for r in results) else EXIT_OK


def score_folder(source: RunSource, first: Transcript, job: Job, args: argparse.Namespace,
                 options: BackendOptions, retry: RetryPolicy) -> int:
    """`first`: the first unit's transcript, loaded already to learn the protocol."""
    out = Path(args.out) if args.out else source.path.with_name(f"{source.path.name}-rescored-{slug(job.roles)}")
    with RunFolder(out) as folder:
        meta = rescored_meta(source, job, out)
        before = folder.meta()
        if before is not None or folder.results_path.exists():
            if not same_job(before, meta):
                raise RunFolderError(f"--out {out}: holds another run; choose another --out")
            clear(out)  # an earlier invocation of this same rescoring: redo it, answering from its cache
        folder.write_meta(meta)
        units = [(first, source.units[0].row)] + [(u.load(), u.row) for u in source.units[1:]]
        work = [(t, row, unit_path(out, t)) for t, row in units]
        cache = NoCache() if args.no_cache else ReplyCache(folder.cache_path)
        engine = ModelEngine(options, cache=cache, retry=retry, concurrency=args.concurrency)
        results = asyncio.run(_rescore(job, work, engine, 2 * args.concurrency))
        for result in results:
            if result.row is not None:
                folder.append_result(result.row)
    show(results, job, many=len(results) > 1, labels=source.meta.get("labels"),
         metric=source.meta.get("headline_metric"))
    rescored = sum(1 for r in results if not r.failed and not r.kept)
    print(f"run: {out} units={len(results)} rescored={rescored} kept={sum(r.kept for r in results)} "
          f"changed={sum(r.changed for r in results)} backend_calls={engine.stats.backend_calls} "
          f"cache_hits={engine.stats.cache_hits}")
    return EXIT_FAILED if any(r.failed.startswith("rescoring failed") for r in results) else EXIT_OK


async def _rescore(job: Job, work: Sequence[tuple[Transcript, Optional[dict[str, Any]], Path]], engine: ModelEngine,
                   in_flight: int) -> list[UnitRescored]:
    try:
        return await rescore_units(job, work, engine, in_flight)
    finally:
        await engine.close()


def rescored_meta(source: RunSource, job: Job, out: Path) -> dict[str, Any]:
    """run.json of the new folder: the original's, with the new models and where it came from."""
    meta: dict[str, Any] = json.loads(json.dumps(source.meta))
    meta["models"] = {**meta.get("models", {}), **job.roles}
    meta["rescored"] = {"from": str(source.path.resolve()), "roles": dict(job.roles), "every": job.every}
    meta["created"] = meta["last_invoked"] = now()
    return meta


def same_job(before: Optional[dict[str, Any]], meta: dict[str, Any]) -> bool:
    return before is not None and before.get("rescored") == meta["rescored"]


def show(results: Sequence[UnitRescored], job: Job, many: bool, labels: Optional[Sequence[str]] = None,
         metric: Optional[str] = None) -> None:
    for result in results:
        if many and (result.lines or result.failed):
            print(f"== {terminal_safe(result.unit)}")
        for line in result.lines:
            print(terminal_safe(line))
        if not many and result.kept:
            print(terminal_safe(f"{result.unit}: kept its result (decided without {', '.join(job.roles)}; "
                                "--every re-decides it)"))
        if not many and result.row and "original_prediction" in result.row:
            row = result.row
            print(terminal_safe(f"{result.unit}: {row['original_prediction']} -> {row['prediction']} "
                                f"({row['decided_by']})"))
        if result.failed:
            print(terminal_safe(f"{result.unit}: {result.failed}"), file=sys.stderr)
    scored = [r.row for r in results if r.row and r.row.get("gold") is not None and "original_prediction" in r.row]
    if scored and labels:
        for name, key in (("before", "original_prediction"), ("after", "prediction")):
            report = summarize([r["gold"] for r in scored], [r[key] for r in scored], labels,
                               metric=metric or "macro_f1")
            print(terminal_safe(f"{name}: {report.metric}={report.score:.4f} accuracy={report.accuracy:.4f} "
                                f"(the {len(scored)} rescored items)"))
