"""moot: LLM deliberation protocols declared in YAML, run on AutoGen, recorded honestly.

The Python API (docs/api.md has a worked example); the command line is a thin layer over it:

    run, prepare           run (or continue) a scenario: one unit, an item, a dataset, a batch of variants
    load_scenario          read and validate a scenario file or a bundled scenario
    RunOptions             how runs are carried out: servers, concurrency, reply cache, resuming
    open_run, open_runs    read saved runs: units, events, metrics (SavedRun, SavedUnit, RunMetrics)
    runs_df, units_df,     saved runs as pandas data frames: one row per run, unit, event, model call
    events_df, calls_df
    rescore                re-run a protocol's deciding roles with other models on a saved run
    document, export       a run as one Markdown or HTML document
    write_report           the report folder of finished runs (tables, CSV, plots)
    load_experiment, run_experiment, plan_experiment, experiment_report
                           experiment grids: load, run (or continue), plan, report (ExperimentResult)
    compare_runs           two runs of labelled items paired on their items (Comparison)
    holds_experiment       whether folders are (or hold) an experiment's, which `moot report` reports as one
    validate               every problem of a scenario, dataset spec or experiment file, one line each
    new_scenario, protocols
                           a new scenario file from a protocol's example; the protocols' names
    schema_text, write_schema
                           the scenario format's JSON Schema (or its key reference), as text or a file
    convert_release        a rumour dataset's public release read as threads (Converted; .write(out))
    llama_server, llama_server_binary, ServerOptions
                           llama.cpp's own server for a GGUF, built once
    viewer, write_bundle   the web viewer of every run under a folder (Viewer; await .serve), or its static bundle
    bundled_scenarios, bundled_experiments, demo_sets
                           what ships with moot, by name
    open_replay, unit_states
                           a saved unit shown as it happened (Replay; .play(out)); a batch's units and how each ended
    protocol_commands, prepare_command
                           the protocols' own commands, and the run one stands for
    annotate, rate_in_browser
                           a person rating a run's units blind (a Rater), or in the browser
    SeatSpec, FolderPerson, ScriptedPerson, QueuedPerson, PersonLeft
                           seats a person takes in a run, and who answers them
    LivePrinter, BatchStatus, show_end
                           a run on text streams as the command line shows it: live, and its end
    plan_lines, is_grid, grid_of, parse_shard
                           an experiment's plan as printed; a scenario with vary/repeats as an experiment; a shard
    prices_of, trace       what model calls cost (RunOptions.prices); spans to an OpenTelemetry collector
    MootError              every error moot reports as one line (its `exit_code` is the command line's)

Each name is imported when first used, so `import moot` loads nothing else.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers read it as True)

_WHERE = {
    "__version__": "moot.version",
    "run": "moot.api.running", "prepare": "moot.api.running", "load_scenario": "moot.api.running",
    "PreparedRun": "moot.api.running", "RunResult": "moot.api.running", "Running": "moot.api.running",
    "Watcher": "moot.api.running",
    "RunOptions": "moot.api.options",
    "open_run": "moot.api.saved", "open_runs": "moot.api.saved", "SavedRun": "moot.api.saved",
    "SavedUnit": "moot.api.saved", "RunMetrics": "moot.api.saved", "MeasureSummary": "moot.api.saved",
    "runs_df": "moot.api.frames", "units_df": "moot.api.frames", "events_df": "moot.api.frames",
    "calls_df": "moot.api.frames",
    "rescore": "moot.api.outputs", "Rescoring": "moot.api.outputs", "document": "moot.api.outputs",
    "export": "moot.api.outputs", "write_report": "moot.api.outputs",
    "MootError": "moot.errors",
    "load_experiment": "moot.experiment.api", "run_experiment": "moot.experiment.api",
    "plan_experiment": "moot.experiment.api", "experiment_report": "moot.experiment.api",
    "ExperimentResult": "moot.experiment.api", "validate": "moot.experiment.api",
    "compare_runs": "moot.experiment.api", "Comparison": "moot.experiment.api", "holds_experiment": "moot.experiment.api",
    "new_scenario": "moot.api.authoring", "protocols": "moot.api.authoring",
    "schema_text": "moot.api.schema", "write_schema": "moot.api.schema",
    "convert_release": "moot.api.datasets", "Converted": "moot.api.datasets",
    "llama_server": "moot.api.servers", "llama_server_binary": "moot.api.servers", "ServerOptions": "moot.api.servers",
    "viewer": "moot.viewer.api", "Viewer": "moot.viewer.api", "write_bundle": "moot.viewer.api", "Bundled": "moot.viewer.api",
    "bundled_scenarios": "moot.api.bundled", "bundled_experiments": "moot.api.bundled", "demo_sets": "moot.api.bundled",
    "protocol_commands": "moot.api.commands", "prepare_command": "moot.api.commands",
    "open_replay": "moot.api.replaying", "Replay": "moot.api.replaying", "unit_states": "moot.api.replaying",
    "annotate": "moot.api.annotating", "rate_in_browser": "moot.viewer.api",
    "SeatSpec": "moot.api.seats", "FolderPerson": "moot.api.seats", "ScriptedPerson": "moot.api.seats",
    "QueuedPerson": "moot.api.seats", "PersonLeft": "moot.api.seats",
    "prices_of": "moot.api.options", "trace": "moot.api.options",
    "LivePrinter": "moot.api.console", "BatchStatus": "moot.api.console", "show_end": "moot.api.console",
    "plan_lines": "moot.experiment.api", "is_grid": "moot.experiment.api", "grid_of": "moot.experiment.api",
    "parse_shard": "moot.experiment.api",
}
__all__ = [
    "__version__", "run", "prepare", "load_scenario", "PreparedRun", "RunResult", "Running", "Watcher", "RunOptions",
    "open_run", "open_runs", "SavedRun", "SavedUnit", "RunMetrics", "MeasureSummary",
    "runs_df", "units_df", "events_df", "calls_df",
    "rescore", "Rescoring", "document", "export", "write_report", "MootError",
    "load_experiment", "run_experiment", "plan_experiment", "experiment_report", "ExperimentResult",
    "compare_runs", "Comparison", "holds_experiment", "validate", "new_scenario", "protocols", "schema_text", "write_schema",
    "convert_release", "Converted", "llama_server", "llama_server_binary", "ServerOptions",
    "viewer", "Viewer", "write_bundle", "Bundled",
    "bundled_scenarios", "bundled_experiments", "demo_sets", "protocol_commands", "prepare_command",
    "open_replay", "Replay", "unit_states", "annotate", "rate_in_browser",
    "SeatSpec", "FolderPerson", "ScriptedPerson", "QueuedPerson", "PersonLeft", "prices_of", "trace",
    "LivePrinter", "BatchStatus", "show_end", "plan_lines", "is_grid", "grid_of", "parse_shard",
]

if TYPE_CHECKING:
    from moot.experiment.api import (
        Comparison, ExperimentResult, compare_runs, experiment_report, grid_of, holds_experiment, is_grid,
        load_experiment, parse_shard, plan_experiment, plan_lines, run_experiment, validate,
    )
    from moot.api.authoring import new_scenario, protocols
    from moot.api.bundled import bundled_experiments, bundled_scenarios, demo_sets
    from moot.api.annotating import annotate
    from moot.api.commands import prepare_command, protocol_commands
    from moot.api.console import BatchStatus, LivePrinter, show_end
    from moot.api.replaying import Replay, open_replay, unit_states
    from moot.api.seats import FolderPerson, PersonLeft, QueuedPerson, ScriptedPerson, SeatSpec
    from moot.api.datasets import Converted, convert_release
    from moot.api.schema import schema_text, write_schema
    from moot.api.servers import ServerOptions, llama_server, llama_server_binary
    from moot.viewer.api import Bundled, Viewer, rate_in_browser, viewer, write_bundle
    from moot.api.frames import calls_df, events_df, runs_df, units_df
    from moot.api.options import RunOptions, prices_of, trace
    from moot.api.outputs import Rescoring, document, export, rescore, write_report
    from moot.api.running import PreparedRun, RunResult, Running, Watcher, load_scenario, prepare, run
    from moot.api.saved import MeasureSummary, RunMetrics, SavedRun, SavedUnit, open_run, open_runs
    from moot.errors import MootError
    from moot.version import __version__


def __getattr__(name: str) -> object:
    """A public name, imported from its module on first use."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'moot' has no attribute {name!r}")
    value: object = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
