"""Running a scenario from Python: one unit, one item, every item of a dataset, a batch of variants.

`prepare` checks everything that can be wrong before anything is written (the scenario, the
dataset, the models and their servers, the run folder's identity comes next) and returns a
`PreparedRun`; its `run()` (or `await run_async()`) runs the units in the run folder; `run(...)`
does both. Running the same again continues the run: finished units are never redone and no
finished model call is sent again. A run that fails or is interrupted is not an exception: its
`RunResult.status` says so and running it again resumes it. Bad input raises a MootError (one
line; its `exit_code` is the command line's).

An experiment runs one `prepare(...).run()` per cell: the scenario may be an object (an arm's,
with overrides applied) with the file it came from as `source`, the options (`RunOptions`, e.g.
one reply cache for every cell) are shared, and `identity` adds what else makes a cell itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import (
    TYPE_CHECKING, Any, Callable, Coroutine, Iterable, Iterator, Literal, Mapping, Optional, Sequence, TypeVar, Union,
)

from moot.api.options import Models, PathLike, RunOptions, backend_options, key_items, reply_cache
from moot.contract.registry import AnyProtocol
from moot.data.load import dataset_fingerprint
from moot.kit._context import Listener, Unit
from moot.engine.folder import RunFolder
from moot.saved.files import iter_results
from moot.engine.meta import check_identity, describe_run, record_session
from moot.engine.plan import Plan, dataset_plan, item_plan, variant_plan
from moot.engine.runner import BatchOutcome, Progress, RunSetup, run_units
from moot.saved.seatfiles import clear_pending
from moot.kit.seats import seated_agents
from moot.engine.setup import resolve_models, role_models
from moot.engine.unparsed import unparsed_failure
from moot.safety.utf8 import refuse_undecodable
from moot.errors import UsageError, nearest
from moot.models.calls import RetryPolicy
from moot.models.engine import EngineStats as EngineStats, ModelEngine, RoleModel  # RunResult.stats: the API names it
from moot.models.factory import load_backends, preflight, public
from moot.models.budget import Budget
from moot.models.prices import Prices
from moot.models.provider import BackendOptions
from moot.models.batch import WINDOW_S, Batcher
from moot.models.providers import PROVIDERS
from moot.models.spec import provider_of
from moot.protocols.registry import REGISTRY
from moot.safety.signals import routed_to
from moot.scenario.blocks import ScenarioBase
from moot.scenario.bundled import bundled_names, find_dataset, find_scenario
from moot.scenario.load import load_scenario as load, scenario_content_hash, scenario_hash

if TYPE_CHECKING:
    from moot.api.saved import SavedRun

T = TypeVar("T")
ScenarioLike = Union[PathLike, ScenarioBase]  # a file, a bundled scenario's name, or a loaded scenario
Inputs = Union[Mapping[str, Union[str, Sequence[str]]], Sequence[str]]  # {KEY: VALUE} or ["KEY=VALUE", ...]
Vary = Union[Mapping[str, Union[str, int, Sequence[Union[str, int]]]], Sequence[str]]  # {KEY: [V, ...]} or ["KEY=V1,V2"]
Status = Literal["completed", "failed", "interrupted"]


def find_scenario_file(scenario: PathLike) -> Path:
    """A scenario file, or the bundled scenario of that name; an unknown name is an error naming
    the nearest bundled one."""
    path = find_scenario(Path(scenario))
    if not path.exists() and path == Path(path.name) and not path.suffix:  # a name, not a file
        raise UsageError(f"{scenario}: no such scenario file or bundled scenario"
                         f"{nearest(Path(scenario).stem, bundled_names())} (moot run --list)")
    return path


def load_scenario(scenario: PathLike) -> ScenarioBase:
    """Read and validate a scenario file or a bundled scenario (`"drug_policy"`); a ScenarioError
    names the file, line and key of any problem."""
    return _scenario_and_source(scenario, None)[0]


def default_out(source: Path, dataset: Optional[Path], vary: Sequence[str] = ()) -> Path:
    """transcripts/SCENARIO[-DATASET][-VARIED], relative to the working directory: a batch of variants
    gets a folder of its own (`drug_policy-seed-1-2`), so it never meets a single run's folder."""
    import re

    varied = "-".join(re.sub(r"[^A-Za-z0-9._-]+", "-", item).strip("-") for item in vary)[:80]
    return Path("transcripts") / (source.stem + (f"-{dataset.stem}" if dataset else "") + (f"-{varied}" if varied else ""))


def each_value(value: Union[str, Sequence[str]]) -> list[str]:
    """An input's values: a list repeats its key (`--input comment=... --input comment=...`)."""
    return [value] if isinstance(value, str) else list(value)


def values_text(value: Union[str, int, Sequence[Union[str, int]]]) -> list[str]:
    """A vary key's values as one `V1,V2,...` text."""
    return [str(value) if isinstance(value, (str, int)) else ",".join(map(str, value))]


def plan_of(protocol: AnyProtocol, scenario: ScenarioBase, dataset: Optional[Path], limit: Optional[int],
            inputs: Sequence[str], vary: Sequence[str]) -> Plan:
    """The units: a dataset's items, one item, or the scenario once or as a batch of variants."""
    if protocol.units.items:
        if vary:
            raise UsageError(f"--vary makes a batch of runs of the scenario; {protocol.name} runs items "
                             "(use --dataset)")
        if dataset:
            if inputs:
                raise UsageError("--input gives one item; with --dataset the items come from the dataset")
            return dataset_plan(protocol, scenario, dataset, limit)
        return item_plan(protocol, scenario, inputs)
    for flag, value in (("--dataset", dataset), ("--input", inputs), ("--limit", limit)):
        if value:
            raise UsageError(f"{flag}: a {protocol.name} has no items; its scenario is its input")
    return variant_plan(protocol, scenario, vary)


def headline_metric(scenario: ScenarioBase, plan: Plan) -> Optional[str]:
    """Declared, never guessed: the scenario's `metric:`, else the dataset's, else the protocol's default."""
    if not scenario.label_set():
        return None
    declared = scenario.declared_metric() or (plan.spec.metric if plan.spec else None)
    return declared or scenario.headline_metric()


def retry_policy(scenario: ScenarioBase) -> RetryPolicy:
    """The scenario's `retry:` as the engine's policy."""
    retry = scenario.retry
    return RetryPolicy(retry.attempts, retry.backoff_s, retry.timeout_s)


def check_batched(specs: Iterable[str], seats: bool) -> None:
    """--batch needs every model's backend to have a batch API, and no person in a seat (a wave
    would wait on their answers)."""
    if seats:
        raise UsageError("--batch: a seat a person takes cannot wait a day for its wave; run without --human")
    for spec in sorted(set(specs)):
        if provider_of(spec).batches is None:
            batched = ", ".join(p.name for p in PROVIDERS.all() if p.batches)
            raise UsageError(f"--batch: {spec} has no batch API (batches go through: {batched})")


def check_seats(protocol: AnyProtocol, scenario: ScenarioBase, options: RunOptions) -> None:
    """Seats a person takes must be the protocol's seats for this scenario, with someone to answer."""
    if not options.seats:
        return
    seated_agents(protocol.seats(scenario) if protocol.seats else {}, options.seats, protocol.name)
    if options.person is None:
        raise UsageError("seats for people need someone to answer them (RunOptions.person)")


def check_priced(specs: Iterable[str], backends: BackendOptions, options: RunOptions) -> None:
    """A cost limit needs the price of every model the run sends calls to."""
    if options.max_cost is None:
        return
    for spec in sorted(set(specs)):
        if (options.prices or Prices()).of(spec, backends) is None:
            provider = provider_of(spec).name
            raise UsageError(f"--max-cost: no price for {spec}; give --price PROMPT COMPLETION, --prices FILE or "
                             f"the scenario's backends.{provider}.prices")


def _scenario_and_source(scenario: ScenarioLike, source: Optional[PathLike]) -> tuple[ScenarioBase, Path]:

    if isinstance(scenario, ScenarioBase):
        if source is None:
            raise UsageError("a scenario given as an object needs source=FILE: the file it came from "
                             "(runs record its path and hash)")
        return scenario, Path(source)
    path = find_scenario_file(scenario)
    loaded: ScenarioBase = load(path)
    return loaded, path


def prepare(scenario: ScenarioLike, *, source: Optional[PathLike] = None, dataset: Optional[PathLike] = None,
            limit: Optional[int] = None, inputs: Optional[Inputs] = None, vary: Optional[Vary] = None,
            models: Optional[Models] = None, out: Optional[PathLike] = None, options: Optional[RunOptions] = None,
            identity: Optional[Mapping[str, object]] = None, check_models: bool = True) -> "PreparedRun":
    """Check a run before anything is written; `.run()` runs it.

    `scenario`: a file, a bundled scenario's name, or a loaded scenario (then `source` is its file).
    What runs: a protocol of items runs every item of `dataset` (the first `limit`), else the one
    item of the scenario's `input:` with `inputs` on top; a protocol whose units are runs of the
    scenario runs it once, or once per combination of `vary` values (`{"seed": [1, 2, 3]}`).
    `models`: SPEC for every role or {KEY: SPEC}; `out`: the run folder (default
    transcripts/SCENARIO[-DATASET]); `identity`: more of run.json's identity (a protocol command's
    task, an experiment cell's own keys). `check_models`: check each model's key, file and server
    now and load its client code (False: a plan that will not run, e.g. to count its units)."""
    options = options or RunOptions()
    if limit is not None and limit < 1:
        raise UsageError(f"limit must be at least 1, got {limit}")
    loaded, path = _scenario_and_source(scenario, source)
    protocol = REGISTRY.get(loaded.PROTOCOL)
    data = find_dataset(dataset) if dataset is not None else None
    varied = key_items(vary, values_text)
    plan = plan_of(protocol, loaded, data, limit, key_items(inputs, each_value), varied)
    folder = Path(out) if out is not None else default_out(path, data, varied)
    overrides = tuple(key_items(models))
    resolved = resolve_models(loaded, overrides)
    backends = backend_options(options, loaded.backends)
    check_priced(resolved.values(), backends, options)
    if check_models and options.clients is None:
        preflight(resolved.values(), backends)
    if check_models:
        load_backends(resolved.values())
    check_seats(protocol, loaded, options)
    if options.batch:
        check_batched(resolved.values(), bool(options.seats))
    metric = headline_metric(loaded, plan)
    if options.resume and not folder.exists():
        raise UsageError(f"--resume: {folder} does not exist (nothing to continue)")
    file_sha256 = scenario_hash(path)
    keys = {"protocol": protocol.name, "scenario_sha256": file_sha256,
            "scenario_content_sha256": scenario_content_hash(loaded),
            **({"dataset_sha256": dataset_fingerprint(plan.spec)} if plan.spec else {}),
            "models": dict(sorted(resolved.items())), **(identity or {})}
    return PreparedRun(protocol, loaded, path, plan, folder, limit, resolved, overrides, backends, options,
                       metric, keys, file_sha256)


@dataclass(frozen=True)
class Running:
    """A run about to start its units, as whatever shows it live sees it (the command line's
    live transcript of one unit, or its status line over many)."""

    protocol: AnyProtocol
    scenario: ScenarioBase
    folder: Path
    planned: int
    done: int  # units finished by earlier invocations
    stats: EngineStats  # live counters: calls, cache hits, tokens
    stop: Callable[[str], None]  # ends the run early (resumable), giving the reason


@dataclass(frozen=True)
class Watcher:
    """What follows a run: `listener` gets each unit's events as they are recorded (and turns as
    they start), `progress` each finished unit; `close` runs when the units are done."""

    listener: Optional[Listener] = None
    progress: Optional[Progress] = None
    close: Optional[Callable[[], None]] = None


Watch = Callable[[Running], Watcher]  # called once the run folder is open, before the first unit


@dataclass(frozen=True)
class RunResult:
    """How a run ended. Its units' results and transcripts are in `folder` (`open()` reads them)."""

    folder: Path
    protocol: str
    planned: int
    metric: Optional[str]  # the headline metric run.json declares (labelled runs)
    outcome: BatchOutcome
    stats: EngineStats
    stop_reason: Optional[str] = None  # why the run was stopped from outside (Ctrl-C, a closed output)
    unparsed: Optional[str] = None  # why its answers measured too little (moot.engine.unparsed), if they did

    @property
    def status(self) -> Status:
        """`interrupted` (resumable), `failed` (some units failed: run again to retry them), or `completed`."""
        if self.outcome.interrupted:
            return "interrupted"
        return "failed" if self.outcome.failed else "completed"

    @property
    def done(self) -> int:
        """Units finished, in this invocation or before."""
        return self.outcome.done

    def open(self) -> "SavedRun":
        """The run folder, opened to read its units, events and metrics."""
        from moot.api.saved import open_run  # reading runs back: not needed to run one

        return open_run(self.folder)


@dataclass(frozen=True)
class Started:
    """A run whose folder is open and whose engine is ready (PreparedRun._started)."""

    setup: RunSetup
    folder: RunFolder
    engine: ModelEngine
    watcher: Watcher
    in_flight: int
    batcher: Optional[Batcher] = None  # with --batch: the run's own (closed with it) or a shared one
    owned: bool = False

    def result(self, prepared: "PreparedRun", outcome: BatchOutcome) -> RunResult:
        unparsed = unparsed_failure(outcome.rows(), prepared.scenario.unparsed_limit())
        return RunResult(self.folder.path, prepared.protocol.name, prepared.planned, prepared.metric, outcome,
                         self.engine.stats, self.setup.stop.reason, unparsed)


@dataclass(frozen=True)
class PreparedRun:
    """A checked run, nothing written yet (see `prepare`). `plan.units()` lists its units."""

    protocol: AnyProtocol
    scenario: ScenarioBase
    source: Path  # the scenario's file
    plan: Plan
    out: Path  # the run folder
    limit: Optional[int]
    models: Mapping[str, str]  # role -> model spec
    model_overrides: tuple[str, ...]  # `KEY=SPEC` items over each unit's scenario (a variant's too)
    backends: BackendOptions = field(repr=False)
    options: RunOptions = field(repr=False)
    metric: Optional[str] = None
    identity: Mapping[str, object] = field(default_factory=dict, repr=False)
    scenario_sha256: str = ""
    budget: Optional[Budget] = field(default=None, repr=False, compare=False)  # shared by an experiment's cells

    @property
    def planned(self) -> int:
        return self.plan.total

    def run(self, watch: Optional[Watch] = None) -> RunResult:
        """Run (or continue) the units in the run folder; see the module docstring. In a thread
        whose event loop is running (a notebook) it runs on a thread of its own."""
        with self._started(watch) as started:
            outcome = blocking(lambda: self._units(started))
        return started.result(self, outcome)

    async def run_async(self, watch: Optional[Watch] = None) -> RunResult:
        """`run`, awaited in the caller's event loop."""
        with self._started(watch) as started:
            outcome = await self._units(started)
        return started.result(self, outcome)

    @contextmanager
    def _started(self, watch: Optional[Watch]) -> Iterator["Started"]:
        """The run folder open and locked, its identity checked, the engine and its reply cache
        ready, the watcher told: all before an event loop runs (which takes file descriptors of
        its own, so a process out of them fails on the run's files, named)."""
        setup = RunSetup(self.protocol, str(self.source), self.scenario_sha256, public(self.backends),
                         self.options.allow_model_change, seats=self.options.seats, person=self.options.person)
        info = describe_run(self.protocol.name, self.scenario, str(self.source), self.metric, self.plan, self.limit,
                            self.models)
        refuse_undecodable({**self.identity, **info})
        with RunFolder(self.out) as folder:
            check_identity(folder, self.identity, info, self.options.allow_model_change)
            if self.options.seats:
                clear_pending(folder.path)  # a stopped process's questions are asked anew
            spent = folder.record().spent
            batch = self.options.batch
            batcher = batch if isinstance(batch, Batcher) else Batcher(folder.path) if batch else None
            retry = retry_policy(self.scenario)
            engine = ModelEngine(self.backends, cache=reply_cache(self.options, folder.cache_path),
                                 retry=replace(retry, timeout_s=WINDOW_S + retry.timeout_s) if batcher else retry,
                                 concurrency=self.options.concurrency, clients=self.options.clients,
                                 prices=self.options.prices or Prices(),
                                 budget=self.budget or Budget(self.options.max_cost, spent), batcher=batcher)
            done = sum(1 for _ in iter_results(folder.path))
            if batcher is not None:
                batcher.expect(max(0, self.planned - done))
            watcher = watch(Running(self.protocol, self.scenario, folder.path, self.planned, done, engine.stats,
                                    setup.stop.request)) if watch else Watcher()
            yield Started(setup, folder, engine, watcher, self.in_flight(), batcher, batcher is not batch)

    async def _units(self, started: "Started") -> BatchOutcome:
        setup, engine, watcher = started.setup, started.engine, started.watcher
        task = setup.stop.task = asyncio.current_task()
        if setup.stop.reason is not None and task is not None:  # stopped before it started (the output closed)
            task.cancel()
        ended = False
        try:
            with routed_to(setup.stop.request, lambda: setup.stop.reason is not None):
                outcome = await run_units(setup, self.plan.units(), started.folder, engine, self.models_of,
                                          in_flight=started.in_flight, listener=watcher.listener,
                                          progress=watcher.progress)
            ended = True
            return outcome
        finally:
            await engine.close()
            if started.owned and started.batcher is not None:
                await started.batcher.close()
            if watcher.close is not None:
                watcher.close()
            try:
                record_session(started.folder, engine.stats)
            except OSError:  # e.g. the full disk that stopped the units: theirs is the failure to name
                if ended:
                    raise

    def models_of(self, unit: Unit) -> dict[str, RoleModel]:
        """The models of a unit's roles (a variant may change its scenario's models)."""
        return role_models(unit.scenario, resolve_models(unit.scenario, self.model_overrides))

    def in_flight(self) -> int:
        """How many units run at once. On the embedded model one at a time: the model answers one
        request at a time anyway, and each unit keeps its conversation or document in the model's
        cache, so two interleaved would each evaluate theirs again at every turn (and a batch's
        status would wait for eight items to finish together)."""
        first = next(self.plan.units(), None)
        if self.options.batch:  # every unit: a wave holds each one's next call
            return max(1, self.planned)
        if self.options.seats:  # one person answers one question at a time
            return 1
        if first is not None and any(provider_of(m.spec).local for m in self.models_of(first).values()):
            return 1
        return 2 * self.options.concurrency if self.protocol.units.items else self.options.concurrency


def run(scenario: ScenarioLike, *, source: Optional[PathLike] = None, dataset: Optional[PathLike] = None,
        limit: Optional[int] = None, inputs: Optional[Inputs] = None, vary: Optional[Vary] = None,
        models: Optional[Models] = None, out: Optional[PathLike] = None, options: Optional[RunOptions] = None,
        identity: Optional[Mapping[str, object]] = None, watch: Optional[Watch] = None) -> RunResult:
    """Run (or continue) a scenario: `prepare(...)` with the same arguments, then `.run(watch)`."""
    return prepare(scenario, source=source, dataset=dataset, limit=limit, inputs=inputs, vary=vary, models=models,
                   out=out, options=options, identity=identity).run(watch)


def blocking(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """The coroutine's result, from synchronous code: on this thread, or on a thread of its own
    when this thread's event loop is running already (a notebook cell)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(work())).result()
