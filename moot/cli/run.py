"""`moot run SCENARIO [--dataset D] [--out DIR]`: run anything, continue anything.

SCENARIO is a file or a bundled scenario's name (`moot run drug_policy`). What runs depends on the
protocol: a conference (or a batch of them with --vary), one item (the scenario's `input:` and
--input), or every item of a dataset (--dataset). Everything goes to one run folder (--out, default
transcripts/SCENARIO[-DATASET]); running the same command again on it continues the run: finished
units are never redone and no finished model call is sent again (--resume says so explicitly).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from autogen_core.models import ChatCompletionClient

from moot.scenario.bundled import bundled_names, find_dataset, find_scenario
from moot.cli import EXIT_FAILED, EXIT_OK, EXIT_PIPE, heap
from moot.cli.options import (
    Parser, add_backends, add_engine, add_model, add_out, backend_options, positive_int,
)
from moot.cli.show import OUTPUT_CLOSED, BatchStatus, LivePrinter, print_batch_end, print_unit_end
from moot.data.load import dataset_fingerprint
from moot.models.cache import NoCache, ReplyCache
from moot.models.calls import RetryPolicy
from moot.models.engine import ModelEngine, RoleModel
from moot.models.factory import BackendOptions, load_backends
from moot.models.preflight import preflight
from moot.models.spec import parse_spec
from moot.contract.protocol import Protocol
from moot.protocols.registry import REGISTRY
from moot.engine.folder import RunFolder, iter_results
from moot.engine.context import Unit
from moot.engine.meta import check_identity, describe_run
from moot.engine.plan import Plan, dataset_plan, item_plan, variant_plan
from moot.engine.runner import BatchOutcome, RunSetup, run_units
from moot.engine.setup import resolve_models, role_models
from moot.engine.unparsed import EXIT_UNPARSED, unparsed_failure
from moot.scenario.load import load_scenario, scenario_content_hash, scenario_hash
from moot.errors import UsageError, nearest
from moot.safety.signals import exit_code, headline, routed_to, signal_of

Clients = Mapping[str, ChatCompletionClient]  # ready clients by role or spec (tests' doubles)
ModelsOf = Callable[[Unit], Mapping[str, RoleModel]]


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot run", description=__doc__.splitlines()[0],
               epilog="examples:\n  moot run drug_policy\n  moot run drug_policy --vary seed=1,2,3"
                      "\n  moot run cola --input text=... --input target=..."
                      "\n  moot run cola --dataset datasets/vast.yaml --limit 50 --concurrency 16",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", nargs="?", help="scenario file, or the name of a bundled scenario")
    p.add_argument("--list", action="store_true", help="list the bundled scenarios and exit")
    p.add_argument("--input", action="append", default=[], metavar="KEY=VALUE",
                   help="one item's input (e.g. text=..., target=...; comment=... repeats), over the scenario's")
    p.add_argument("--dataset", type=find_dataset, metavar="DATA.yaml",
                   help="run every item of a dataset (a file, or a bundled demo set: demo-stance, demo-rumour, "
                        "demo-rumour-veracity, demo-sentiment)")
    p.add_argument("--limit", type=positive_int, help="the first N items of the dataset (after its filter)")
    p.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2",
                   help="a batch of runs of the scenario, one per value: seed=1,2,3 | model=SPEC,SPEC | a key of "
                        "the protocol's own (a conference: personas=SETS.yaml); repeatable, they multiply")
    add_out(p, "run folder (default transcripts/SCENARIO[-DATASET])")
    add_model(p)
    add_engine(p)
    add_backends(p)
    p.add_argument("--resume", action="store_true", help="continue the run in the folder (what rerunning does anyway)")
    p.add_argument("--allow-model-change", action="store_true",
                   help="continue a run with other models than it started with (recorded in the run)")
    p.add_argument("--quiet", action="store_true", help="no live output; only the summary")
    return p


def default_out(scenario_path: Path, dataset: Optional[Path]) -> Path:
    name = scenario_path.stem + (f"-{dataset.stem}" if dataset else "")
    return Path("transcripts") / name


def plan_of(protocol: Protocol[Any], scenario: Any, args: argparse.Namespace) -> Plan:
    if protocol.units.items:
        if args.vary:
            raise UsageError(f"--vary makes a batch of runs of the scenario; {protocol.name} runs items "
                             "(use --dataset)")
        if args.dataset:
            if args.input:
                raise UsageError("--input gives one item; with --dataset the items come from the dataset")
            return dataset_plan(protocol, scenario, args.dataset, args.limit)
        return item_plan(protocol, scenario, args.input)
    for flag, value in (("--dataset", args.dataset), ("--input", args.input), ("--limit", args.limit)):
        if value:
            raise UsageError(f"{flag}: a {protocol.name} has no items; its scenario is its input")
    return variant_plan(protocol, scenario, args.vary)


def run(argv: Sequence[str], clients: Optional[Clients] = None) -> int:
    """`clients`: ready model clients by role or spec, for tests (the scripted model's doubles)."""
    args = parser().parse_args(argv)
    if args.list:
        print("\n".join(bundled_names()))
        return EXIT_OK
    if not args.scenario:
        raise UsageError("moot run: give a scenario file or a bundled scenario's name (moot run --list)")
    path = find_scenario(args.scenario)
    if not path.exists() and path == Path(path.name) and not path.suffix:  # a name, not a file
        raise UsageError(f"{args.scenario}: no such scenario file or bundled scenario"
                         f"{nearest(Path(args.scenario).stem, bundled_names())} (moot run --list)")
    scenario = load_scenario(path)
    protocol = REGISTRY.get(getattr(scenario, "protocol"))
    plan = plan_of(protocol, scenario, args)
    out = Path(args.out) if args.out else default_out(path, args.dataset)
    return run_plan(protocol, scenario, path, plan, out, args, clients)


def run_plan(protocol: Protocol[Any], scenario: Any, path: Path, plan: Plan, out: Path, args: argparse.Namespace,
             clients: Optional[Clients] = None, identity_extra: Optional[Mapping[str, object]] = None) -> int:
    """Check everything that can be wrong before anything is written, then run `plan` in `out`.
    `identity_extra`: more of run.json's identity (e.g. judge-eval's task and prompts)."""
    models = resolve_models(scenario, args.model)
    options = backend_options(args, scenario.backends)
    if clients is None:
        preflight(models.values(), options)
    load_backends(models.values())
    metric = headline_metric(scenario, plan)
    if args.resume and not out.exists():
        raise UsageError(f"--resume: {out} does not exist (nothing to continue)")
    file_sha256 = scenario_hash(path)
    identity = {"protocol": protocol.name, "scenario_sha256": file_sha256,
                "scenario_content_sha256": scenario_content_hash(scenario),
                **({"dataset_sha256": dataset_fingerprint(plan.spec)} if plan.spec else {}),
                "models": dict(sorted(models.items())), **(identity_extra or {})}
    setup = RunSetup(protocol, str(path), file_sha256, options.public(), args.allow_model_change)
    with RunFolder(out) as folder:
        check_identity(folder, identity, describe_run(protocol.name, scenario, str(path), metric, plan, args.limit),
                       args.allow_model_change)
        return execute(setup, plan, folder, args, options, metric, scenario, clients)


def headline_metric(scenario: Any, plan: Plan) -> Optional[str]:
    """Declared, never guessed: the scenario's `metric:`, else the dataset's, else the protocol's default."""
    if not getattr(scenario, "labels", None):
        return None
    declared = getattr(scenario, "metric", None) or (plan.spec.metric if plan.spec else None)
    return declared or scenario.headline_metric()


def units_in_flight(protocol: Protocol[Any], plan: Plan, args: argparse.Namespace, models_of: ModelsOf) -> int:
    """How many units run at once. On the embedded model one at a time: the model answers one
    request at a time anyway, and each unit keeps its conversation or document in the model's
    cache, so two interleaved would each evaluate theirs again at every turn (and a batch's status
    would wait for eight items to finish together)."""
    first = next(plan.units(), None)
    embedded = first is not None and any(parse_spec(m.spec).provider == "local" for m in models_of(first).values())
    if embedded:
        return 1
    return 2 * int(args.concurrency) if protocol.units.items else int(args.concurrency)


def execute(setup: RunSetup, plan: Plan, folder: RunFolder, args: argparse.Namespace, options: BackendOptions,
            metric: Optional[str], scenario: Any, clients: Optional[Clients] = None) -> int:
    """Run the plan's units in `folder`, showing them live (one) or as a status line (many)."""
    retry = RetryPolicy(scenario.retry.attempts, scenario.retry.backoff_s, scenario.retry.timeout_s)
    cache = NoCache() if args.no_cache else ReplyCache(folder.cache_path)
    engine = ModelEngine(options, cache=cache, retry=retry, concurrency=args.concurrency, clients=clients)
    single = plan.total == 1
    closed = setup.stop.request  # the reader of our output went away: stop, resumable
    live = LivePrinter(setup.protocol, scenario, on_closed=closed) if single and not args.quiet else None
    status = None if single or args.quiet else BatchStatus(plan.total, sum(1 for _ in iter_results(folder.path)),
                                                           engine.stats, on_closed=closed)

    def models_of(unit: Unit) -> dict[str, RoleModel]:
        return role_models(unit.scenario, resolve_models(unit.scenario, args.model))

    async def go() -> BatchOutcome:
        task = setup.stop.task = asyncio.current_task()
        if setup.stop.reason is not None and task is not None:  # stopped before it started (the output closed)
            task.cancel()
        try:
            with routed_to(setup.stop.request, lambda: setup.stop.reason is not None):
                return await run_units(setup, plan.units(), folder, engine, models_of,
                                       in_flight=units_in_flight(setup.protocol, plan, args, models_of),
                                       listener=live or status, progress=status.update if status else None)
        finally:
            await engine.close()

    heap.settle()
    try:
        outcome = asyncio.run(go())
    finally:
        if status is not None:
            status.close()
    if single:
        print_unit_end(setup.protocol, folder, next(plan.units()).id, outcome, engine.stats)
    else:
        print_batch_end(setup.protocol, folder, outcome, engine.stats, metric)
    if setup.stop.reason == OUTPUT_CLOSED:
        return EXIT_PIPE
    if outcome.interrupted:
        sig = signal_of(setup.stop.reason) or signal.SIGINT
        print(f"{headline(sig)}: run the same command again to continue ({folder.path})", file=sys.stderr)
        return exit_code(sig)
    if outcome.failed:
        return EXIT_FAILED
    failure = unparsed_failure(outcome.rows(), getattr(scenario, "max_unparsed", None))
    if failure:
        print(f"failed: {failure}", file=sys.stderr)
        return EXIT_UNPARSED
    return EXIT_OK
