"""EXPERIMENT.yaml: a grid of runs in one file, checked whole before anything runs.

    experiment: cola-vs-baselines        # the folder's name under transcripts/ (unless --out)
    title: COLA against its baselines
    arms:                                # a scenario (file or bundled name) + overrides by dotted path
      - {name: cola, scenario: cola}
      - {name: direct, scenario: cola_direct}
      - {name: cola-text, scenario: cola, set: {judger.output: text}}
      - {name: debate, scenario: debate}
      - {name: first-round, first_round_of: debate}   # read from the debate arm's saved runs
      - {name: judge, command: judge-eval, options: {task: stance}}   # a protocol command's scenario
    datasets: [demo-stance]              # dataset files or names under datasets/; none for conferences
    models: [local]                      # optional axis: every role of an arm on each model
    repeats: 3                           # seeds: the scenario's generation.seed + 0 .. repeats-1
    seeds: [1, 7, 42]                    # or these seeds (in place of repeats)
    limit: 20                            # optional: the first N items of each dataset
    compare: {reference: cola, metrics: [macro_f1, accuracy]}
    prices: {prompt: 0.15, completion: 0.60}   # per million tokens, every model's (--price beats it)
    max_cost: 20                         # US dollars the whole grid may spend (--max-cost beats it)
    published: {table: COLA/Table 2, rows: {cola: COLA, direct: GPT-3.5}}   # or a list; marks: strict
    score: {grader: openai:gpt-4o}       # each finished cell re-scored by a deciding role (moot score)

An arm with `command: NAME` runs the scenario that protocol command (`moot NAME DATA.yaml
--OPTION VALUE ...`, moot.contract.commands) builds from its `options:` and the labels of the
experiment's datasets (which must share one label set), then its `set:` overrides. An arm with `first_round_of: ARM` runs nothing: its prediction per unit is the majority of the
first-round answers of ARM's units (a debate-style protocol's `rounds` hook reads them from the
results rows; a tie is unparsed), a baseline at no extra cost. A cell is arm x dataset x model x repeat. Everything a cell needs is checked here: an unknown key,
an override path the arm's scenario does not have (the override is applied and the scenario
validated again), a dataset without labels for a compared metric, two arms with one name, a
reference or published row naming no arm, a `score:` role that is not a deciding role of every arm,
a `compare: {test: …}` that does not test a metric the experiment compares or a published table
shows (McNemar tests accuracy only).
`score:` re-runs those roles with those models on each finished cell (`moot score`, into a copy
beside it) and the report reads the copy: a conference's judge decisions graded 1-10 (Heller et
al. Table 5). Each problem is one line naming the file, line and key
(ExperimentError, exit 2), raised before any folder is made.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Optional, Sequence, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from moot.contract.protocol import Protocol
from moot.contract.vary import Data, set_path
from moot.data.spec import DatasetError, DatasetSpec, load_dataset_spec
from moot.engine.plan import input_columns
from moot.experiment.analysis import suited
from moot.errors import nearest
from moot.metrics.classification import METRICS, defined
from moot.models.price import Price
from moot.models.spec import parse_spec
from moot.protocols.registry import REGISTRY
from moot.report.published import tables as published_tables
from moot.scenario.bundled import bundled_names, find_dataset as bundled_dataset, find_scenario
from moot.scenario.errors import key_and_message, to_scenario_error
from moot.scenario.load import load_scenario
from moot.safety.yamlsource import KeyPath, SourceError, YamlSource, read_yaml
from moot.scenario.blocks import ScenarioBase

NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"  # a folder name on every system
Name = Annotated[str, Field(pattern=NAME, max_length=60)]
Test = Literal["paired_t", "bootstrap", "wilcoxon", "mcnemar"]


class ExperimentError(SourceError):
    """A problem in an experiment file: one line, `file:line: key: message` (exit 2)."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ArmSpec(Strict):
    name: Name
    scenario: Optional[str] = None
    set: dict[str, Any] = {}
    label: Optional[str] = None  # how the arm reads in tables (default: its name)
    first_round_of: Optional[str] = None  # a derived arm: the majority of that arm's first-round answers
    command: Optional[str] = None  # a protocol command whose scenario the arm runs (module docstring)
    options: dict[str, Any] = {}  # that command's options, by name (task: stance)


class CompareSpec(Strict):
    reference: str
    metrics: tuple[str, ...] = ()  # default: each run's headline metric
    test: Optional[Test] = None  # default: paired t over varying repeats, else the paired bootstrap


class PublishedSpec(Strict):
    table: str
    rows: dict[str, str]  # arm -> the paper's row it reproduces
    marks: Literal["paper", "strict"] = "paper"  # the rule of the table's marks (moot.experiment.tables)


class ExperimentSpec(Strict):
    experiment: Name
    title: str = ""
    arms: Annotated[tuple[ArmSpec, ...], Field(min_length=1)]
    datasets: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    repeats: Annotated[int, Field(ge=1, le=1000)] = 1
    seeds: tuple[int, ...] = ()  # the seeds to run, in place of generation.seed + 0 .. repeats-1
    limit: Optional[Annotated[int, Field(ge=1)]] = None
    compare: Optional[CompareSpec] = None
    prices: Optional[Price] = None  # every model's, per million tokens (--price or --prices beats it)
    max_cost: Optional[Annotated[float, Field(ge=0)]] = None  # US dollars, all cells together (--max-cost beats it)
    published: Union[PublishedSpec, tuple[PublishedSpec, ...], None] = None
    score: dict[str, str] = {}  # deciding role -> model: each finished cell re-scored (moot score), reported

    @property
    def tables(self) -> tuple[PublishedSpec, ...]:
        """The published tables it reproduces (none, one or several)."""
        given = self.published
        return () if given is None else (given,) if isinstance(given, PublishedSpec) else given


@dataclass(frozen=True)
class Arm:
    """An arm as it runs: its scenario with the overrides in place, and where it came from."""

    name: str
    label: str
    protocol: Protocol[Any]
    scenario: ScenarioBase
    path: Path  # the scenario file
    overrides: tuple[tuple[str, object], ...]
    identity: Mapping[str, object] = field(default_factory=dict)  # more of its runs' identity (a command's)


@dataclass(frozen=True)
class Dataset:
    name: str  # the spec file's stem: what tables and the published columns call it
    path: Path
    spec: DatasetSpec


@dataclass(frozen=True)
class Experiment:
    """A checked experiment file (module docstring)."""

    spec: ExperimentSpec
    path: Path
    arms: tuple[Arm, ...]  # the arms that run
    datasets: tuple[Dataset, ...]
    derived: tuple[tuple[str, str], ...] = ()  # (arm, the arm whose first-round answers it reads)
    text: Optional[str] = None  # made on the command line (moot.experiment.shorthand): written to `path` when it runs

    @property
    def order(self) -> list[str]:
        """Every arm's name, as the file lists them (derived ones included)."""
        return [a.name for a in self.spec.arms]

    @property
    def name(self) -> str:
        return self.spec.experiment

    def arm(self, name: str) -> Arm:
        return next(a for a in self.arms if a.name == name)


def load_experiment(path: str | Path, datasets: Optional[Sequence[str]] = None) -> Experiment:
    """Read and check an experiment file (module docstring); ExperimentError on the first problem.
    `datasets`: in place of the file's (a quick check of a paper's experiment on data at hand)."""
    try:
        source = read_yaml(path)
    except SourceError as exc:
        raise ExperimentError(exc.file, exc.detail, exc.key, exc.line) from None
    return experiment_from(source, Path(path), datasets)


def experiment_from(source: YamlSource, path: Path, datasets: Optional[Sequence[str]] = None) -> Experiment:
    """An experiment from its YAML (a file's, or one the command line made: moot.experiment.shorthand)."""
    if isinstance(source.data, dict) and datasets is not None:
        source.data["datasets"] = list(datasets)
    if not isinstance(source.data, dict):
        raise ExperimentError(source.file, "an experiment file is a mapping of keys (experiment, arms, ...)")
    try:
        spec = ExperimentSpec.model_validate(source.data)
    except ValidationError as exc:
        found = to_scenario_error(exc, source, ExperimentSpec)
        raise ExperimentError(found.file, found.detail, found.key, found.line) from None
    base = Path(path).resolve().parent
    _unique([a.name for a in spec.arms], source)
    commands = {i: _command_protocol(source, i, arm) for i, arm in enumerate(spec.arms) if arm.command is not None}
    built = {i: _arm(source, i, arm, base) for i, arm in enumerate(spec.arms)
             if arm.first_round_of is None and i not in commands}
    protocols = [(spec.arms[i].name, p) for i, p in sorted({**commands, **{i: a.protocol for i, a in built.items()}}.items())]
    read = _datasets(source, spec, protocols, base)
    built.update({i: _command_arm(source, i, spec.arms[i], protocol, read) for i, protocol in commands.items()})
    arms = tuple(built[i] for i in sorted(built))
    derived = tuple(_derived(source, i, arm, arms) for i, arm in enumerate(spec.arms) if arm.first_round_of is not None)
    for i, model in enumerate(spec.models):
        _checked(source, ("models", i), lambda: parse_spec(model))
    _compare(source, spec, arms, read)
    _published(source, spec)
    _score(source, spec, arms)
    return Experiment(spec, path, arms, read, derived)


def _score(source: YamlSource, spec: ExperimentSpec, arms: Sequence[Arm]) -> None:
    """Each re-scoring role is a deciding role of every arm's protocol, on a model spec moot knows."""
    for role, model in spec.score.items():
        _checked(source, ("score", role), lambda: parse_spec(model))
        for arm in arms:
            if role not in arm.protocol.deciders:
                known = ", ".join(arm.protocol.deciders) or "none"
                raise fail(source, ("score", role), f"{role!r} is not a deciding role of arm {arm.name!r} "
                                                    f"({arm.protocol.name}: {known}){nearest(role, arm.protocol.deciders)}")


def _derived(source: YamlSource, index: int, arm: ArmSpec, arms: Sequence[Arm]) -> tuple[str, str]:
    """A first-round-majority arm: its source arm runs, and its protocol reads rounds of answers."""
    if arm.scenario is not None or arm.set:
        raise fail(source, ("arms", index, "first_round_of"), "an arm read from another's first round runs "
                                                              "nothing: give it no scenario and no set")
    found = next((a for a in arms if a.name == arm.first_round_of), None)
    if found is None:
        names = [a.name for a in arms]
        raise fail(source, ("arms", index, "first_round_of"),
                   f"{arm.first_round_of!r} is not an arm that runs{nearest(str(arm.first_round_of), names)}")
    if found.protocol.rounds is None:
        raise fail(source, ("arms", index, "first_round_of"),
                   f"arm {found.name!r} ({found.protocol.name}) records no rounds of answers")
    return arm.name, found.name


def fail(source: YamlSource, key: KeyPath, message: str) -> ExperimentError:
    return ExperimentError(source.file, message, key, source.line_of(key))


def _checked(source: YamlSource, key: KeyPath, check: Any) -> Any:
    try:
        return check()
    except (ValueError, SourceError) as exc:
        raise fail(source, key, " ".join(str(exc).split())) from None


def _unique(names: Sequence[str], source: YamlSource) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise fail(source, ("arms", i, "name"), f"arm {name!r} is named twice; arm names must be distinct")
        seen.add(name)


def _arm(source: YamlSource, index: int, arm: ArmSpec, base: Path) -> Arm:
    key: KeyPath = ("arms", index, "scenario")
    if arm.scenario is None:
        raise fail(source, ("arms", index), "an arm needs a scenario (or command: NAME, or first_round_of: ARM)")
    given = base / arm.scenario if (base / arm.scenario).is_file() else find_scenario(arm.scenario)
    if not given.is_file():
        raise fail(source, key, f"no scenario file or bundled scenario {arm.scenario!r}"
                                f"{nearest(Path(arm.scenario).stem, bundled_names())}")
    scenario = load_scenario(given)  # its own errors name its own file and line
    protocol = REGISTRY.get(scenario.protocol)
    changed = _overridden(source, index, arm, scenario, given, protocol)
    return Arm(arm.name, arm.label or arm.name, protocol, changed, given, tuple(arm.set.items()))


def _overridden(source: YamlSource, index: int, arm: ArmSpec, scenario: Any, given: Path,
                protocol: Protocol[Any]) -> Any:
    """The scenario with the arm's `set` overrides applied and validated again."""
    data: Data = scenario.model_dump(exclude_unset=True)
    for path, value in arm.set.items():
        data = set_path(data, path, value)
    try:
        changed = type(scenario).model_validate(data).resolve_paths(given.resolve().parent)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        bad, message = key_and_message(err, type(scenario))
        path = ".".join(str(p) for p in bad)
        override = next((p for p in arm.set if path == p or path.startswith(p + ".") or p.startswith(path)), None)
        where: KeyPath = ("arms", index, "set", override) if override else ("arms", index, "set")
        raise fail(source, where, f"{path or 'the scenario'}: {message} (in the {protocol.name} scenario "
                                  f"{given.name})") from None
    return changed


class _Options(argparse.ArgumentParser):
    """A command's own options, read from an arm's `options:`; a bad one is a ValueError."""

    def error(self, message: str) -> Any:
        raise ValueError(message.replace("the following arguments are required", "missing options"))


def _command_protocol(source: YamlSource, index: int, arm: ArmSpec) -> Protocol[Any]:
    """The protocol whose command the arm names."""
    commands = REGISTRY.commands()
    if arm.scenario is not None or arm.first_round_of is not None:
        raise fail(source, ("arms", index, "command"), "an arm runs a scenario, a command's, or another's first "
                                                       "round: give one of scenario, command, first_round_of")
    if arm.command not in commands:
        raise fail(source, ("arms", index, "command"), f"no protocol command {arm.command!r}"
                                                       f"{nearest(str(arm.command), commands)} (known: {', '.join(commands)})")
    return next(p for p in REGISTRY.all(from_yaml=False) if commands[str(arm.command)] in p.commands)


def _command_arm(source: YamlSource, index: int, arm: ArmSpec, protocol: Protocol[Any],
                 datasets: Sequence[Dataset]) -> Arm:
    """The scenario the arm's command builds from its options and the datasets' labels, `set` on top."""
    command = REGISTRY.commands()[str(arm.command)]
    label_sets = {tuple(_labels(d)) for d in datasets}
    if len(label_sets) != 1:
        raise fail(source, ("arms", index, "command"), f"{arm.command} builds one scenario for one label set; the "
                                                       f"datasets have {len(label_sets)}: give them one experiment each")
    parser = _Options(prog=f"moot {arm.command}", add_help=False)
    command.options(parser)
    argv = [text for key, value in arm.options.items() for text in (f"--{key.replace('_', '-')}", str(value))]
    try:
        args = parser.parse_args(argv)
        args.dataset = datasets[0].path
        prepared = command.prepare(args, list(next(iter(label_sets))))
    except (ValueError, SourceError) as exc:
        raise fail(source, ("arms", index, "options"), " ".join(str(exc).split())) from None
    scenario = _overridden(source, index, arm, prepared.scenario, prepared.scenario_path, protocol)
    return Arm(arm.name, arm.label or arm.name, protocol, scenario, prepared.scenario_path, tuple(arm.set.items()),
               dict(prepared.identity))


def find_dataset(given: str, base: Path) -> Path:
    """A dataset spec: the path as given (from the experiment's folder, then the working one), a
    name under datasets/ there (`demo-stance` is datasets/demo-stance.yaml), or a dataset moot
    ships (as `--dataset demo-stance` finds it from any folder)."""
    name = given if given.endswith((".yaml", ".yml")) else f"{given}.yaml"
    for folder in (base, Path.cwd(), base.parent):
        for candidate in (folder / given, folder / name, folder / "datasets" / name):
            if candidate.is_file():
                return candidate
    return bundled_dataset(given)


def _datasets(source: YamlSource, spec: ExperimentSpec, arms: Sequence[tuple[str, Protocol[Any]]],
              base: Path) -> tuple[Dataset, ...]:
    """The datasets, read for the input columns of the arms' protocols (`arms`: name, protocol)."""
    items = [(name, p) for name, p in arms if p.units.items]
    if items and not spec.datasets:
        name, protocol = items[0]
        raise fail(source, ("arms", [a.name for a in spec.arms].index(name)),
                   f"arm {name!r} runs items ({protocol.name}): name them under `datasets:`")
    if spec.datasets and not items:
        raise fail(source, ("datasets",), "no arm runs items of a dataset (its scenarios are their own input)")
    columns = sorted({c for _, protocol in items for c in input_columns(protocol)})
    found: list[Dataset] = []
    for i, given in enumerate(spec.datasets):
        path = find_dataset(given, base)
        if not path.is_file():
            raise fail(source, ("datasets", i), f"{given}: no such dataset spec beside the experiment, in the working "
                       "folder or among moot's demo sets (the papers' specs are in the datasets/ folder of moot's "
                       "repository, which `pip install .` does not carry: run from a clone, or give --dataset FILE)")
        try:
            loaded = load_dataset_spec(path, columns)
        except DatasetError as exc:
            raise fail(source, ("datasets", i), str(exc)) from None
        if any(d.name == path.stem for d in found):
            raise fail(source, ("datasets", i), f"two datasets named {path.stem!r}")
        found.append(Dataset(path.stem, path, loaded))
    return tuple(found)


def _labels(dataset: Dataset) -> list[str]:
    return sorted(set((dataset.spec.labels or {}).values())) if dataset.spec.columns.label else []


def _compare(source: YamlSource, spec: ExperimentSpec, arms: Sequence[Arm], datasets: Sequence[Dataset]) -> None:
    if spec.compare is None:
        return
    names = [a.name for a in spec.arms]
    if spec.compare.reference not in names:
        raise fail(source, ("compare", "reference"),
                   f"{spec.compare.reference!r} is not an arm{nearest(spec.compare.reference, names)}")
    for i, metric in enumerate(spec.compare.metrics):
        if metric not in METRICS:
            raise fail(source, ("compare", "metrics", i),
                       f"unknown metric {metric!r}{nearest(metric, METRICS)} (known: {', '.join(METRICS)})")
        for j, dataset in enumerate(datasets):
            labels = [label for arm in arms for label in arm.scenario.label_set()]
            if not dataset.spec.columns.label:
                raise fail(source, ("datasets", j), f"{dataset.name} has no label column, so no {metric} to compare")
            if not defined(metric, labels or _labels(dataset)):
                raise fail(source, ("compare", "metrics", i),
                           f"{metric} is not defined on the labels of {dataset.name} ({', '.join(_labels(dataset))})")
    test = spec.compare.test
    unsuited = [m for m in _tested_metrics(spec, arms, datasets) if test is not None and not suited(test, m)]
    if unsuited:
        raise fail(source, ("compare", "test"), f"{test} does not test {', '.join(unsuited)} (it tests accuracy only); "
                                                "name paired_t, bootstrap or wilcoxon, which test the metric itself")


def _tested_metrics(spec: ExperimentSpec, arms: Sequence[Arm], datasets: Sequence[Dataset]) -> list[str]:
    """The metrics a p-value is computed of: those compared (default: each run's headline metric,
    as a run declares it) and those of the published tables' columns."""
    compared = list(spec.compare.metrics) if spec.compare and spec.compare.metrics else [
        arm.scenario.declared_metric() or dataset.spec.metric or arm.scenario.headline_metric()
        for arm in arms if arm.scenario.label_set() for dataset in datasets]
    known = published_tables()
    shown = [c.metric for t in spec.tables if t.table in known for c in known[t.table].spec.columns]
    return list(dict.fromkeys(m for m in [*compared, *shown] if m))


def _published(source: YamlSource, spec: ExperimentSpec) -> None:
    known = published_tables()
    arms = [a.name for a in spec.arms]
    for i, table in enumerate(spec.tables):
        at: KeyPath = ("published",) if isinstance(spec.published, PublishedSpec) else ("published", i)
        if table.table not in known:
            raise fail(source, (*at, "table"), f"no published table {table.table!r}"
                                               f"{nearest(table.table, known)} (known: {', '.join(known)})")
        rows = known[table.table].rows
        for arm, row in table.rows.items():
            if arm not in arms:
                raise fail(source, (*at, "rows", arm), f"{arm!r} is not an arm{nearest(arm, arms)}")
            if row not in rows:
                raise fail(source, (*at, "rows", arm), f"{row!r} is not a row of {table.table}{nearest(row, rows)}")


__all__ = ["Arm", "Dataset", "Experiment", "ExperimentError", "ExperimentSpec", "Test", "find_dataset",
           "load_experiment"]
