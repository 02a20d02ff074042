"""`python run_conference.py SCENARIO` for per-item protocols (COLA, ...).

One item: the text/target come from the scenario's `input:` or `--input key=value`; every agent's
contribution is printed as it arrives, then the final label and explanation; the transcript is
saved. A dataset (`--dataset DATA.yaml`) runs as a resumable batch in `--out DIR`; the last
line is `run: DIR items=N backend_calls=N cache_hits=N unparsed=N`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import datetime
from pathlib import Path
from typing import Sequence

from pydantic import ValidationError

from moot.cli_args import add_backend_args, add_batch_args, add_model_arg
from moot.datasets import dataset_fingerprint, iter_items, load_dataset_spec
from moot.metrics import paper_metric
from moot.models.calls import RetryPolicy
from moot.models.factory import BackendOptions
from moot.protocols import protocol_module
from moot.protocols.batch import check_run_dir, run_batch
from moot.protocols.cache import NoCache, ReplyCache
from moot.protocols.context import Engine
from moot.protocols.items import run_one
from moot.protocols.record import Call
from moot.protocols.runinfo import run_info
from moot.scenario import load_scenario, scenario_content_hash, scenario_hash
from moot.scenario_errors import key_and_message
from moot.yamlsource import format_key


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="run_conference.py", description="Run a per-item protocol scenario.")
    p.add_argument("scenario", type=Path, help="scenario YAML file (protocol: cola, ...)")
    p.add_argument("--input", action="append", default=[], metavar="KEY=VALUE",
                   help="one item's input, e.g. text=..., target=... (COLA), claim=..., comment=... "
                        "(S2MAD, repeatable); overrides the scenario's input")
    p.add_argument("--dataset", type=Path, metavar="DATA.yaml", help="run over a dataset")
    add_batch_args(p, out_help="dataset: run directory (default runs/SCENARIO-DATASET); "
                               "one item: transcript path (default transcripts/...)",
                   cache_help="reply cache file (default: DIR/cache.sqlite or runs/cache.sqlite)")
    add_model_arg(p, "model for all or one role")
    add_backend_args(p)
    p.add_argument("--quiet", action="store_true", help="one item: print only the result")
    return p


def with_models(scenario, overrides: Sequence[str], proto=None):
    """`--model [ROLE=]SPEC` applied to the scenario's `models`; a bare SPEC plays every role.

    A protocol without a `default` model key (negotiation) says through `models_for_all` which
    keys a bare SPEC fills.
    """
    models = dict(scenario.models)
    for text in overrides:
        role, sep, spec = text.partition("=")
        if sep:
            models[role.strip()] = spec.strip()
        elif hasattr(proto, "models_for_all"):
            models = proto.models_for_all(scenario, text.strip())
        else:
            models = {"default": text.strip()}
    if not overrides:
        return scenario
    try:
        return type(scenario).model_validate({**scenario.model_dump(exclude_unset=True), "models": models})
    except ValidationError as exc:
        key, message = key_and_message(exc.errors(include_url=False)[0], type(scenario))
        raise ValueError(f"--model: {format_key(key)}: {message}") from None


def parse_inputs(pairs: Sequence[str], keys: Sequence[str], lists: Sequence[str] = ()) -> dict:
    """`KEY=VALUE` pairs; keys in `lists` may repeat and collect into a list (e.g. comments)."""
    inputs: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key not in keys:
            raise ValueError(f"--input {pair!r}: expected KEY=VALUE with KEY one of {', '.join(keys)}")
        if key in lists:
            inputs.setdefault(key, []).append(value)
        else:
            inputs[key] = value
    return inputs


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    scenario = load_scenario(args.scenario)
    proto = protocol_module(scenario.protocol)
    scenario = with_models(scenario, args.model, proto)
    if hasattr(proto, "prepare"):  # e.g. resolve paths relative to the scenario file
        scenario = proto.prepare(scenario, args.scenario)
    options, retry = call_settings(args, scenario)
    if args.dataset:
        return run_dataset(args, scenario, proto, options, retry)
    return _run_single(args, scenario, proto, options, retry)


def call_settings(args, scenario) -> tuple[BackendOptions, RetryPolicy]:
    """Backend options (command line over the scenario's `backends:`) and the retry policy."""
    if args.concurrency < 1:
        raise ValueError(f"--concurrency must be >= 1, got {args.concurrency}")
    options = BackendOptions(args.base_url or scenario.backends.openai.base_url, args.api_key,
                             args.ollama_host or scenario.backends.ollama.host,
                             scenario.backends.local.n_ctx, scenario.backends.local.n_threads)
    retry = RetryPolicy(scenario.retry.attempts, scenario.retry.backoff_s, scenario.retry.timeout_s)
    return options, retry


def _engine(args, cache_path: Path, options, retry) -> Engine:
    cache = NoCache() if args.no_cache else ReplyCache(args.cache or cache_path)
    return Engine(concurrency=args.concurrency, cache=cache, retry=retry, options=options)


def _run_single(args, scenario, proto, options, retry) -> int:
    given = {**scenario.input.model_dump(exclude_none=True),
             **parse_inputs(args.input, proto.INPUT_KEYS, getattr(proto, "LIST_KEYS", ()))}
    item = proto.from_fields(scenario, "item", given)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = args.out or Path("transcripts") / f"{args.scenario.stem}-{stamp}.jsonl"
    printer = (lambda e: None) if args.quiet else _print_call

    async def go():
        engine = _engine(args, Path("runs") / "cache.sqlite", options, retry)
        try:
            return await run_one(proto, scenario, args.scenario, scenario_hash(args.scenario), engine,
                                 item, path, printer), engine.stats
        finally:
            await engine.close()

    result, stats = asyncio.run(go())
    if result.status != "completed":
        print(f"run failed: {result.cause} (run again: finished calls come from the cache)", file=sys.stderr)
        print(f"transcript: {path}")
        return 1
    print(f"{getattr(proto, 'RESULT_NAME', 'prediction')}: {result.prediction}")
    if result.explanation:
        print(f"explanation: {result.explanation}")
    print(f"transcript: {path}")
    print(f"backend_calls={stats.backend_calls} cache_hits={stats.cache_hits} tokens={stats.tokens}")
    return 0


def _print_call(event) -> None:
    if isinstance(event, Call):
        cached = ", cached" if event.cached else ""
        print(f"== {event.role} ({event.stage}{cached})\n{event.reply.strip()}\n", flush=True)


def headline_metric(proto, scenario, dataset: Path) -> str:
    """The metric printed first and used by `report` (recorded in run.json): the scenario's own
    `metric:` if set, else the dataset's paper metric (moot.metrics.paper_metric: F_avg on
    SemEval-2016 / P-Stance, macro-F1 on VAST), else the scenario's headline metric. judge-eval
    reports accuracy and macro-F1 like Heller et al.'s tables."""
    if getattr(scenario, "metric", None) or proto.NAME == "judge_eval":
        return scenario.headline_metric()
    return paper_metric(dataset.stem, scenario.labels, scenario.headline_metric())


def run_dataset(args, scenario, proto, options: BackendOptions, retry: RetryPolicy) -> int:
    """Run `proto` over `args.dataset` as a resumable batch in `args.out`; the exit code.

    The dataset half of the protocol runner, shared with `judge-eval`: it checks labels and ids,
    writes run.json (refusing a run directory made by another scenario, dataset or models),
    runs the batch, prints the metrics and ends with the `run: DIR items=... unparsed=...` line.
    `args` needs dataset, scenario, out, limit, resume, cache, no_cache and concurrency.
    """
    spec = load_dataset_spec(args.dataset)
    out = args.out or Path("runs") / f"{args.scenario.stem}-{args.dataset.stem}"
    if args.resume and not out.exists():
        raise ValueError(f"--resume: {out} does not exist")
    sha = scenario_hash(args.scenario)
    labels, items, seen = set(scenario.labels), [], set()
    for raw in iter_items(spec, args.limit):
        if raw.label is not None and raw.label not in labels:
            raise ValueError(f"{args.dataset}: label {raw.label!r} of item {raw.id} is not one of the "
                             f"scenario's labels ({', '.join(scenario.labels)}); map it under `labels:`")
        if raw.id in seen:
            raise ValueError(f"{args.dataset}: item id {raw.id!r} occurs twice; ids must be unique")
        seen.add(raw.id)
        items.append(proto.from_dataset(scenario, raw))
    identity = {"scenario_sha256": sha, "scenario_content_sha256": scenario_content_hash(scenario),
                "dataset_sha256": dataset_fingerprint(spec),
                "models": {k: v for k, v in sorted(scenario.models.items())},
                **(proto.identity(scenario) if hasattr(proto, "identity") else {})}
    metric = headline_metric(proto, scenario, args.dataset)
    check_run_dir(out, identity, {**run_info(proto, scenario, args.scenario, args.dataset, spec,
                                             args.limit, len(items)), "headline_metric": metric})

    async def go():
        engine = _engine(args, out / "cache.sqlite", options, retry)
        try:
            return await run_batch(proto, scenario, args.scenario, sha, items, engine, out,
                                   metric=metric), engine.stats
        finally:
            await engine.close()

    outcome, stats = asyncio.run(go())
    if outcome.report is not None:
        print(outcome.report.format())
    for failed in outcome.failed:
        print(f"item {failed.id} failed: {failed.cause} (run again to retry it)", file=sys.stderr)
    print(f"results: {out / 'results.jsonl'}")
    print(f"run: {out} items={len(outcome.results)} backend_calls={stats.backend_calls} "
          f"cache_hits={stats.cache_hits} unparsed={outcome.unparsed}")
    return 1 if outcome.failed else 0
