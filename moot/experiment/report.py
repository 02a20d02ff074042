"""`moot report EXPERIMENT_FOLDER [SHARD_FOLDER ...]`: an experiment's findings from its saved cells.

Reads each folder's experiment.json and, per cell, run.json and results.jsonl only (no transcript,
no model call). Shard folders of one experiment (moot.experiment.grid) are read as one: a cell's
units are the union of its shards'. Item targets come from the dataset file, read once per dataset.
Writes, in the report folder:

    experiment.md           every table in Markdown with the methods under it
    arms-*.csv / .tex       per dataset, model, metric and column: each arm with its intervals and
                            its paired comparison with the reference
    published.md/.csv/.tex  the paper's table beside the measured one (when the file names one)
    plots/*.png, *.svg      bars with 95% intervals, n and values (moot.experiment.plots)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from moot.saved.files import read_record, result_rows
from moot.saved.records import RunMeta
from moot.errors import UsageError
from moot.experiment.analysis import Analysis, Cell, Column, analyse
from moot.experiment.dynamics import RoundStat, dynamics_grid, round_stats
from moot.experiment.folders import read_manifest, same_file, unique_stem
from moot.experiment.shards import ShardState, not_done
from moot.experiment.measures import MeasureCell, measure_grid, read_cell, trajectories, trajectory_grid
from moot.metrics.coded import Resampling
from moot.metrics.stats import SEED
from moot.experiment.tables import (
    ByModel, Measured, arms_grid, measured_of, measured_over_runs, model_title, published_columns, published_grid,
)
from moot.report.formats import Grid, latex, markdown, to_csv
from moot.report.published import Column as PublishedColumn, Published, tables as published_tables
from moot.saved.run import models_text
from moot.safety.diskio import write_atomic
from moot.safety.neutral import markdown_safe, terminal_safe

MAX_TARGETS = 12


@dataclass
class Loaded:
    """An experiment's cells read from its folders, and what the report needs to know of it."""

    name: str
    arms: list[str]
    labels: dict[str, str]  # arm -> its label in tables
    cells: list[Cell]
    metrics: dict[str, list[str]]  # dataset -> metrics to report
    targets: dict[str, dict[str, str]]  # dataset -> item id -> target
    reference: Optional[str] = None
    test: Optional[str] = None
    published: list[dict[str, Any]] = field(default_factory=list)  # the tables it reproduces
    dropped: list[str] = field(default_factory=list)  # cells without a labelled result
    benchmarks: dict[str, str] = field(default_factory=dict)  # dataset -> the published dataset it is
    rounds: dict[tuple[str, str, str], list[tuple[str, Answers]]] = field(default_factory=dict)  # (gold, answers)
    measured: list[MeasureCell] = field(default_factory=list)  # cells that are runs of a scenario
    unscored: list[str] = field(default_factory=list)  # cells the experiment's `score:` has not re-scored
    shards: list[ShardState] = field(default_factory=list)  # the shards missing, failed or unfinished
    ran: dict[tuple[str, str], str] = field(default_factory=dict)  # (arm, model axis) -> the models its runs used

    def models_of(self, model: str) -> dict[str, str]:
        """Each arm's models on one value of the model axis (run.json `models`, as a report names them)."""
        return {arm: found for (arm, key), found in self.ran.items() if key == model}


Answers = list[list[Optional[str]]]  # a unit's answers per round
Rows = tuple[dict[str, str], dict[str, Optional[str]], dict[str, Answers]]  # gold, prediction, answers per round


def first_round_majority(answers: Optional[Sequence[Sequence[Optional[str]]]]) -> Optional[str]:
    """The most common parsed answer of the first round; a tie (or none parsed) is unparsed (None)."""
    if not answers:
        return None
    counts = Counter(a for a in answers[0] if a is not None).most_common(2)
    if not counts or (len(counts) == 2 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def _rows(folder: Path, protocol: Optional[str]) -> Rows:
    from moot.contract.registry import PROTOCOLS

    rounds = PROTOCOLS.get(protocol).rounds if protocol and protocol in PROTOCOLS else None
    gold: dict[str, str] = {}
    pred: dict[str, Optional[str]] = {}
    answers: dict[str, Answers] = {}
    for row in result_rows(folder):
        if row.gold is not None:
            gold[row.id], pred[row.id] = row.gold, row.prediction
            found = rounds(row) if rounds is not None else None
            if found:
                answers[row.id] = found
    return gold, pred, answers


def _targets(spec_path: str) -> dict[str, str]:
    from moot.data.load import iter_items, load_dataset_spec

    try:
        spec = load_dataset_spec(spec_path, ("target",))
        return {item.id: str(item.value("target")) for item in iter_items(spec) if item.value("target")}
    except (ValueError, OSError):  # the data is gone: the report has no per-target columns
        return {}


Merged = dict[tuple[str, str, str, int], tuple[dict[str, str], dict[str, Optional[str]], tuple[str, ...], bool]]


def _merge(merged: Merged, key: tuple[str, str, str, int], gold: dict[str, str], pred: dict[str, Optional[str]],
           labels: tuple[str, ...], partial: bool) -> None:
    """A cell's units joined with those its other shards hold."""
    old = merged.get(key, ({}, {}, (), False))
    merged[key] = ({**old[0], **gold}, {**old[1], **pred}, labels, old[3] or partial)


def load(folders: Sequence[Path]) -> Loaded:
    """The cells of one experiment from its folder, or from the folders of its shards."""
    manifests = [(Path(f), read_manifest(Path(f))) for f in folders]
    names = {m["experiment"] for _, m in manifests if m}
    if len(names) != 1 or any(m is None for _, m in manifests):
        raise UsageError("moot report: give one experiment's folder, or the folders of its shards "
                         f"(found experiments: {', '.join(sorted(names)) or 'none'})")
    refuse_unlike_shards(manifests)
    first = manifests[0][1] or {}
    merged: Merged = {}
    measured: list[MeasureCell] = []
    rounds: dict[tuple[str, str, str, int], dict[str, tuple[str, Answers]]] = {}
    derived: dict[str, list[str]] = defaultdict(list)  # the arm -> arms read from its first round
    for name, src in (first.get("derived") or {}).items():
        derived[src].append(name)
    specs: dict[str, str] = {}
    metrics: dict[str, list[str]] = defaultdict(list)
    unscored: list[str] = []
    ran: dict[tuple[str, str], set[str]] = defaultdict(set)
    for root, manifest in manifests:
        for entry in (manifest or {}).get("cells", []):
            folder = root / entry["folder"]
            if entry.get("scored") == "completed":  # re-scored (the experiment's `score:`): the copy counts
                folder = root / entry["scored_folder"]
            elif "scored" in entry and (folder / "run.json").exists():
                unscored.append(f"{entry['arm']}/{entry['dataset']}/{entry['model']}/seed-{entry['seed']}")
            meta = read_record(folder)
            if meta is None:
                continue
            key = (entry["arm"], entry["dataset"], entry["model"], int(entry["seed"]))
            for arm in (entry["arm"], *derived.get(entry["arm"], [])):
                ran[(arm, entry["model"])].add(_models(meta))
            if entry["dataset"] == "-":  # a run of the scenario: its protocol's measures
                found = read_cell(entry["arm"], entry["model"], key[3], folder)
                measured += [found] if found else []
                continue
            gold, pred, answers = _rows(folder, meta.protocol_name)
            partial = entry.get("status") != "completed"
            labels = tuple(meta.labels or ())
            _merge(merged, key, gold, pred, labels, partial)
            firsts = {i: first_round_majority(a) for i, a in answers.items()}
            for name in derived.get(entry["arm"], []):
                _merge(merged, (name, *key[1:]), gold, firsts, labels, partial)
            rounds.setdefault(key, {}).update({i: (gold[i], a) for i, a in answers.items()})
            if meta.dataset_path:
                specs[entry["dataset"]] = meta.dataset_path
            metric = meta.headline
            if metric and metric not in metrics[entry["dataset"]]:
                metrics[entry["dataset"]].append(metric)
    compare = first.get("compare") or {}
    chosen = list(compare.get("metrics") or ())
    cells = [Cell(a, d, m, s, labels, gold, pred, partial) for (a, d, m, s), (gold, pred, labels, partial)
             in sorted(merged.items()) if gold and labels]
    dropped = [f"{a}/{d}/{m}/seed-{s}" for (a, d, m, s), (gold, _, labels, _) in sorted(merged.items())
               if not gold or not labels]
    arms = list(first.get("order") or first.get("arms", {}))
    pooled: dict[tuple[str, str, str], list[tuple[str, Answers]]] = defaultdict(list)
    for (a, d, m, _), units in sorted(rounds.items()):
        pooled[(a, d, m)] += [units[i] for i in sorted(units)]
    shown_as = {a: str((first.get("labels") or {}).get(a, a)) for a in arms}
    return Loaded(first["experiment"], arms, shown_as, cells,
                  {d: chosen or found for d, found in metrics.items()},
                  {d: _targets(p) for d, p in specs.items()}, compare.get("reference"), compare.get("test"),
                  _tables(first.get("published")), dropped,
                  {d: str(v.get("benchmark") or d) for d, v in (first.get("datasets") or {}).items()}, dict(pooled),
                  measured, unscored, not_done(manifests),
                  {key: "; ".join(sorted(found)) for key, found in ran.items()})


def refuse_unlike_shards(manifests: Sequence[tuple[Path, Optional[Mapping[str, Any]]]]) -> None:
    """Shards are pooled as one experiment only when they ran the same thing: an arm or dataset of
    other content, or another --limit, in one of them is one line naming both folders."""
    (first, base), *others = [(folder, m) for folder, m in manifests if m]
    for folder, manifest in others:
        if manifest.get("limit") != base.get("limit"):
            raise UsageError(f"moot report: {folder} ran with limit {manifest.get('limit')}, {first} with limit "
                             f"{base.get('limit')}; their cells are not pooled: run the shards with the same --limit, "
                             "or report them apart")
        for kind, key, what in (("arms", "content_sha256", "arm"), ("datasets", "sha256", "dataset")):
            theirs, ours = _mapping(manifest.get(kind)), _mapping(base.get(kind))
            for name in sorted(set(theirs) & set(ours)):
                mine, other = _mapping(ours[name]), _mapping(theirs[name])
                if other.get(key) != mine.get(key) and not same_file(kind, mine, other):
                    raise UsageError(f"moot report: {folder} ran {what} {name!r} on other content than {first} "
                                     f"({kind}.{name}.{key} differs); its cells are not pooled as one {what}: "
                                     "run the shards on the same files, or report them apart")


def _tables(published: object) -> list[dict[str, Any]]:
    """The manifest's published tables (one mapping in manifests of earlier versions)."""
    if isinstance(published, dict):
        return [published]
    return [t for t in published if isinstance(t, dict)] if isinstance(published, list) else []


@dataclass(frozen=True)
class RunCell:
    """A run folder read as one cell (`moot compare`), with its headline metric."""

    cell: Cell
    metric: str
    dataset_sha256: Optional[str] = None  # the dataset's fingerprint (run.json; folders of older versions: none)


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _models(meta: RunMeta) -> str:
    """The models a run folder's roles used, as a report names them (`scripted (judge=ollama:gemma2:9b)`)."""
    return models_text(meta.models or {})


def cell_of_run(folder: Path, arm: str) -> RunCell:
    """A run folder of labelled items as a cell named `arm` (UsageError when it is none)."""
    meta = read_record(folder)
    if meta is None:
        raise UsageError(f"{folder}: not a run folder (no run.json)")
    gold, pred, _ = _rows(folder, None)
    labels = tuple(meta.labels or ())
    if not gold or not labels:
        raise UsageError(f"{folder}: no labelled result to compare")
    cell = Cell(arm, meta.dataset_name or "items", _models(meta), meta.seed or 0, labels, gold, pred,
                meta.planned != len(gold))
    return RunCell(cell, meta.headline or "macro_f1", meta.dataset_sha256 or None)


def columns_of(loaded: Loaded, dataset: str) -> list[Column]:
    """The dataset's columns: each metric over all items and, with 2-12 targets, per target."""
    targets = sorted(set(loaded.targets.get(dataset, {}).values()))
    per_target = targets if 2 <= len(targets) <= MAX_TARGETS else []
    return [Column(dataset, metric, target) for metric in loaded.metrics.get(dataset, [])
            for target in [None, *per_target]]


def analyses(loaded: Loaded, boot: Resampling) -> list[Analysis]:
    found = []
    pairs = sorted({(c.dataset, c.model) for c in loaded.cells})
    for dataset, model in pairs:
        for column in columns_of(loaded, dataset):
            found.append(analyse(loaded.cells, column, model, loaded.arms, loaded.reference,
                                 loaded.targets.get(dataset), loaded.test, boot.resamples, boot))
    return found


def published_measured(loaded: Loaded, published: Published, boot: Resampling, rows: Mapping[str, str],
                       rule: str = "paper") -> ByModel:
    """Per value of the model axis, each published column the experiment measured: every arm's
    cell, over items (a metric on the paper's dataset, marked under `rule`) or over runs (a
    measure, or a series' step, of runs of a scenario)."""
    found: dict[str, dict[str, dict[str, Measured]]] = defaultdict(dict)
    for name, column in published_columns(published).items():
        for model, analysis in _measured(loaded, column, boot).items():
            found[model][name] = measured_of(analysis, published, rows, rule, loaded.models_of(model))
    for of_runs in published.spec.columns:
        if of_runs.metric is None:
            for model, runs in _over_runs(loaded.measured, of_runs).items():
                found[model][of_runs.name] = measured_over_runs(runs, loaded.models_of(model))
    return dict(found)


def _over_runs(cells: Sequence[MeasureCell], column: PublishedColumn) -> dict[str, dict[str, list[float]]]:
    """Per model, each arm's values of a measure (or of one step of a series), one per run."""
    def value(cell: MeasureCell) -> Optional[float]:
        if column.measure is not None:
            return cell.values.get(column.measure)
        points = [p.value for p in cell.points.get(str(column.series), []) if p.step == column.step]
        return sum(points) / len(points) if points else None

    by_model: dict[str, dict[str, list[float]]] = {}
    for model in sorted({c.model for c in cells}):
        found: dict[str, list[float]] = defaultdict(list)
        for cell in sorted((c for c in cells if c.model == model), key=lambda c: c.seed):
            got = value(cell)
            if got is not None:
                found[cell.arm].append(got)
        if found:
            by_model[model] = dict(found)
    return by_model


def _measured(loaded: Loaded, column: Column, boot: Resampling) -> dict[str, Analysis]:
    """Per model, the column on the first dataset that is the paper's (its `benchmark`) with cells."""
    found: dict[str, Analysis] = {}
    for dataset in sorted({c.dataset for c in loaded.cells if loaded.benchmarks.get(c.dataset, c.dataset) == column.dataset}):
        for model in sorted({c.model for c in loaded.cells if c.dataset == dataset} - set(found)):
            done = analyse(loaded.cells, replace(column, dataset=dataset), model, loaded.arms, loaded.reference,
                           loaded.targets.get(dataset), loaded.test, boot.resamples, boot)
            if done.arms:
                found[model] = done
    return found


@dataclass(frozen=True)
class ExperimentReport:
    out: Path
    main: str  # what the command line prints
    grids: tuple[Grid, ...]
    plots: tuple[Path, ...]


Plot = Callable[[Path, str], list[Path]]  # draws a table's plot into a folder under a stem


@dataclass(frozen=True)
class Table:
    """One table of the report: the stem its files are named by, its Grid, whether the command line
    prints it, and how its plot is drawn (None: it has none). The viewer's experiment page shows the
    same tables (moot.viewer.experiments)."""

    stem: str
    grid: Grid
    printed: bool = False
    plot: Optional[Plot] = None


NOT_MEASURED = ("no column measured here (no unit of the paper's datasets, or no run with its measures; "
                "a paper's dataset file says where its data is published)")


def _plot(kind: str, first: object, *rest: object) -> Plot:
    """A plot of moot.experiment.plots (imported when drawn: the viewer never draws)."""
    def draw(folder: Path, stem: str) -> list[Path]:
        from moot.experiment import plots

        drawn: list[Path] = getattr(plots, kind)(first, folder, stem, *rest)
        return drawn
    return draw


def _write(out: Path, stem: str, grid: Grid) -> None:
    write_atomic(out / f"{stem}.csv", to_csv(grid))
    write_atomic(out / f"{stem}.tex", latex(grid))


def _stem(analysis: Analysis) -> str:
    return unique_stem(f"arms-{analysis.column.dataset}-{analysis.column.target or 'all'}-{analysis.column.metric}-"
                f"{analysis.model}")


def tables(loaded: Loaded, boot: Resampling) -> list[Table]:
    """Every table of the report, in its order: the papers' tables, each arm per column, the
    deliberation dynamics, the protocols' measures and their trajectories."""
    found: list[Table] = []
    for i, published in enumerate(loaded.published):
        table = published_tables()[published["table"]]
        rule = str(published.get("marks") or "paper")  # none in the manifests of earlier versions
        grid = published_grid(published_measured(loaded, table, boot, published["rows"], rule), table,
                              published["rows"], loaded.arms, loaded.labels, rule)
        found.append(Table("published" if not i else unique_stem(f"published-{published['table']}"), grid, True))
    for analysis in analyses(loaded, boot):
        overall = analysis.column.target is None
        grid = arms_grid(analysis, loaded.labels, loaded.models_of(analysis.model))
        found.append(Table(_stem(analysis), grid, overall,
                           _plot("arm_bars", analysis, loaded.labels, grid.title) if overall else None))
    for (dataset, model), by_arm in _dynamics(loaded, boot.resamples).items():
        named = loaded.models_of(model)
        grid = _named(dynamics_grid(by_arm, f"Deliberation dynamics · {dataset} · {model_title(named, model)}"), named)
        found.append(Table(unique_stem(f"dynamics-{dataset}-{model}"), grid,
                           plot=_plot("round_lines", by_arm, grid.title)))
    models = sorted({c.model for c in loaded.measured})
    for measure in sorted({m for c in loaded.measured for m in c.values}):
        for model in models:
            measured = measure_grid(loaded.measured, measure, model, loaded.arms, loaded.reference,
                                    loaded.models_of(model))
            if measured is not None:
                found.append(Table(unique_stem(f"measure-{measure}-{model}"), measured, True))
    steps = {name: step for c in loaded.measured for name, step in c.steps.items()}
    for series, step in sorted(steps.items()):
        for model in models:
            moved = trajectories(loaded.measured, series, model, loaded.arms)
            if moved:
                named = loaded.models_of(model)
                grid = _named(trajectory_grid(moved, series, step, model_title(named, model)), named)
                found.append(Table(unique_stem(f"trajectory-{series}-{model}"), grid,
                                   plot=_plot("lines", moved, grid.title, step, series.replace("_", " "))))
    return found


def printed(table: Table) -> str:
    """A table as the command line prints it (a paper's table with no column measured: one line)."""
    if table.grid.key == "published" and not table.grid.rows:
        return markdown_safe(f"{table.grid.title}: {NOT_MEASURED}")
    return markdown(table.grid)


def build(folders: Sequence[Path], out: Path, resamples: int = 2000) -> ExperimentReport:
    """The experiment's report folder (module docstring)."""
    loaded = load(folders)
    out.mkdir(parents=True, exist_ok=True)
    (out / "plots").mkdir(exist_ok=True)
    found = tables(loaded, Resampling(resamples, SEED))
    written: list[Path] = []
    for table in found:
        _write(out, table.stem, table.grid)
        if table.grid.key == "published":
            write_atomic(out / f"{table.stem}.md", markdown(table.grid) + "\n")
        if table.plot is not None:
            written += table.plot(out / "plots", table.stem)
    body = [f"# Experiment {markdown_safe(loaded.name, cell=True)}", "",
            "Computed from the cells' results.jsonl only; no model was called.",
            "", *(markdown(t.grid) + "\n" for t in found)]
    legend = _arm_legend(loaded)
    if legend:
        body += [legend, ""]
    if loaded.shards:
        body += [_shards_markdown(loaded.shards), ""]
    if loaded.dropped:
        body += [markdown_safe("Cells without a labelled result (not in any table): " + ", ".join(loaded.dropped)), ""]
    if loaded.unscored:
        body += [markdown_safe("Cells not re-scored yet (`score:`; their own results are shown, run the experiment "
                               "again to re-score them): " + ", ".join(loaded.unscored)), ""]
    body += ["## Plots", "", *(f"- [{markdown_safe(p.name, cell=True)}](plots/{p.name})" for p in written), ""]
    write_atomic(out / "experiment.md", "\n".join(body))
    main = [_shards_text(loaded.shards)] if loaded.shards else []
    main += [printed(t) for t in found if t.printed] + ([legend] if legend else [])
    return ExperimentReport(out, "\n\n".join(main), tuple(t.grid for t in found), tuple(written))


def _arm_legend(loaded: Loaded) -> Optional[str]:
    """`Arms: LABEL = NAME; ...` for the arms the tables show by a label other than their name (--vary
    labels an arm by its values; a file's arm by its `label:`)."""
    renamed = [(loaded.labels.get(arm, arm), arm) for arm in loaded.arms if loaded.labels.get(arm, arm) != arm]
    return markdown_safe("Arms: " + "; ".join(f"{label} = {arm}" for label, arm in renamed)) if renamed else None


def _named(grid: Grid, models: Mapping[str, str]) -> Grid:
    """A table whose arms ran on different models, with each arm's models in a note (its title
    names one model only when all ran on it)."""
    if len(set(models.values())) < 2:
        return grid
    named = "; ".join(f"{arm}: {found}" for arm, found in sorted(models.items()))
    return replace(grid, notes=(*grid.notes, f"Models: {named}."))


SHARDS_HEAD = ("Shards not done (a missing shard's cells are in no table, a failed or unfinished one's only "
               "with its finished units); each command runs it again, keeping what it finished:")


def _shards_text(shards: Sequence[ShardState]) -> str:
    return "\n".join([SHARDS_HEAD, *(f"  {s.line()}" for s in shards)])


def _shards_markdown(shards: Sequence[ShardState]) -> str:
    """The shards as a paragraph and their commands as an indented code block (inert Markdown)."""
    commands = ("    " + " ".join(terminal_safe(s.line()).split("\n")) for s in shards)
    return "\n".join([markdown_safe(SHARDS_HEAD), "", *commands])


def _dynamics(loaded: Loaded, resamples: int) -> dict[tuple[str, str], dict[str, list[RoundStat]]]:
    found: dict[tuple[str, str], dict[str, list[RoundStat]]] = defaultdict(dict)
    for (arm, dataset, model), units in loaded.rounds.items():
        found[(dataset, model)][arm] = round_stats(units, resamples)
    return dict(found)
