"""`moot run SCENARIO [--dataset D] [--out DIR]`: run anything, continue anything.

SCENARIO is a file or a bundled scenario's name (`moot run drug_policy`). What runs depends on the
protocol: a conference (or a batch of them with --vary), one item (the scenario's `input:` and
--input), or every item of a dataset (--dataset). Everything goes to one run folder (--out, default
transcripts/SCENARIO[-DATASET]); running the same command again on it continues the run: finished
units are never redone and no finished model call is sent again (--resume says so explicitly).
"""

from __future__ import annotations

import argparse
import signal
from dataclasses import replace
import sys
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from moot.safety.neutral import terminal_safe
from moot.api.bundled import demo_names, find_dataset
from moot.api.console import OUTPUT_CLOSED, BatchStatus, LivePrinter, show_end
from moot.api.running import PreparedRun, RunResult, Running, Watch, Watcher, prepare
from moot.api.seats import FolderPerson
from moot.cli import heap
from moot.cli.options import (Parser, add_backends, add_engine, add_model, add_out, positive_int, run_options,
                              summary)
from moot.errors import EXIT_FAILED, EXIT_OK, EXIT_PIPE, EXIT_UNPARSED, UsageError
from moot.safety.signals import exit_code, headline, signal_of

if TYPE_CHECKING:
    from autogen_core.models import ChatCompletionClient

Clients = Mapping[str, "ChatCompletionClient"]  # ready clients by role or spec (tests' doubles)


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot run", description=summary(__doc__),
               epilog="examples:\n  moot run drug_policy\n  moot run drug_policy --vary seed=1,2,3"
                      "\n  moot run cola --input text=... --input target=..."
                      "\n  moot run cola --dataset demo-stance --limit 12"
                      "\n  moot run cola --dataset datasets/vast_test_zeroshot.yaml --limit 50   (put its file in data/ first)",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", nargs="?", help="scenario file, or the name of a bundled scenario")
    p.add_argument("--list", action="store_true",
                   help="list the bundled scenarios (protocol, title), experiments and demo sets, and exit")
    p.add_argument("--input", action="append", default=[], metavar="KEY=VALUE",
                   help="one item's input (e.g. text=..., target=...; comment=... repeats), over the scenario's")
    p.add_argument("--dataset", type=find_dataset, metavar="DATA.yaml",
                   help=f"run every item of a dataset (a file, or a bundled demo set: {', '.join(demo_names())})")
    p.add_argument("--limit", type=positive_int, help="the first N items of the dataset (after its filter)")
    p.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2",
                   help="runs of the scenario, one per value: seed=1,2,3 | model=SPEC,SPEC | a key of the protocol's own "
                        "(a conference: personas=SETS.yaml) | any scenario key by dotted path (rounds=1,2: an "
                        "experiment, one arm per value); repeatable, they multiply")
    add_out(p, "run folder (default transcripts/SCENARIO[-DATASET])")
    add_model(p)
    add_engine(p)
    p.add_argument("--batch", action="store_true",
                   help="send the model calls through the provider's batch API (openai:MODEL, anthropic:MODEL): about "
                        "half the price, within 24 hours; a wave (one batch per model) per turn across all units, "
                        "journaled in the run folder: rerunning a killed run re-attaches to its batches")
    add_backends(p)
    p.add_argument("--resume", action="store_true", help="continue the run in the folder (what rerunning does anyway)")
    p.add_argument("--allow-model-change", action="store_true",
                   help="continue a run with other models than it started with (recorded in the run)")
    p.add_argument("--quiet", action="store_true", help="no live output; only the summary")
    p.add_argument("--human", action="append", default=[], metavar="SEAT[:SECONDS[:FALLBACK]]",
                   help="take a seat yourself (at the terminal, or see --human-from): an agent's name, a role (judge, "
                        "moderator, judger, debater_p, generator, ...) or a group (participants, debaters); repeatable. "
                        "SECONDS: a time limit per turn, then FALLBACK: model (the seat's model answers, recorded; the "
                        "default) or skip; wait: no limit")
    p.add_argument("--human-from", choices=("terminal", "browser", "files"), default="terminal",
                   help="where the seats' answers come from: the terminal (default); the browser (each seat's link "
                        "is printed: a page of `moot view` serving a folder that holds OUT); or files in the run "
                        "folder (OUT/seats/SEAT.json says what is asked; write OUT/seats/SEAT.answer.json: "
                        "{\"text\": ...})")
    experiments = p.add_argument_group("experiments (an experiment file: top-level `experiment:`; or SCENARIO with "
                                       "--vary KEY=V1,V2 and/or --repeat N)")
    experiments.add_argument("--plan", action="store_true",
                             help="print each cell's units, calls and tokens left, and exit without calling a model")
    experiments.add_argument("--shard", metavar="I/N", help="run only share I of N of the units (into OUT/shard-I-of-N)")
    experiments.add_argument("--allow-changed", action="store_true",
                             help="run cells again whose arm or dataset changed since they ran")
    experiments.add_argument("--repeat", type=positive_int, metavar="N",
                             help="repeats (seeds generation.seed + 0..N-1): of an experiment file, over its `repeats:`; "
                                  "of a scenario, a grid of N runs per arm")
    return p


def run(argv: Sequence[str], clients: Optional[Clients] = None) -> int:
    """`clients`: ready model clients by role or spec, for tests (the scripted model's doubles)."""
    args = parser().parse_args(argv)
    if args.list:
        from moot.cli.listing import listing

        print(listing())
        return EXIT_OK
    if not args.scenario:
        raise UsageError("moot run: give a scenario file or a bundled scenario's name (moot run --list)")
    from moot.cli import experiment

    if experiment.is_experiment_file(args.scenario):
        return experiment.run(args, clients)
    from moot.api.running import find_scenario_file

    scenario = find_scenario_file(args.scenario)
    if args.vary or args.repeat:  # maybe an experiment (its code is imported only then)
        from moot.experiment.api import is_grid

        if is_grid(scenario, args.vary, args.repeat):
            return experiment.run_shorthand(args, scenario, clients)
    for flag, value in (("--plan", args.plan), ("--shard", args.shard), ("--allow-changed", args.allow_changed)):
        if value:
            batch = f"; --vary {' '.join(args.vary)} runs a batch of variants, not an experiment" if args.vary else ""
            raise UsageError(f"{flag}: for an experiment (a file with `experiment:` at its top, or SCENARIO with "
                             f"--repeat N or --vary of a scenario key){batch}")
    prepared = prepare(args.scenario, dataset=args.dataset, limit=args.limit, inputs=args.input, vary=args.vary,
                       models=args.model, out=args.out, options=run_options(args, clients))
    if args.human and args.human_from == "files":
        prepared = replace(prepared, options=replace(prepared.options, person=FolderPerson(prepared.out)))
    if args.human and args.human_from == "browser":
        from moot.cli.seat import BrowserPerson, opening_seats

        seats = [spec.name for spec in prepared.options.seats]
        person = BrowserPerson(prepared.out, quiet=args.quiet)
        prepared = replace(prepared, options=replace(prepared.options, person=person))
        return execute(prepared, args.quiet, opening_seats(watch(args.quiet), seats))
    return execute(prepared, args.quiet)


def execute(prepared: PreparedRun, quiet: bool, watching: Optional[Watch] = None) -> int:
    """Run it, showing one unit live or many as a status line; the end lines; the exit code."""
    result = prepared.run(watching or watch(quiet))
    show_end(prepared, result)
    return exit_code_of(result)


def watch(quiet: bool) -> Watch:
    """One unit shown live (its turns as they happen), many as a status line; nothing when quiet."""

    def start(running: Running) -> Watcher:
        single = running.planned == 1
        watcher = Watcher()
        if single and not quiet:
            watcher = Watcher(LivePrinter(running.protocol, running.scenario, on_closed=running.stop))
        elif not single and not quiet:
            status = BatchStatus(running.planned, running.done, running.stats, on_closed=running.stop)
            watcher = Watcher(status, status.update, status.close)
        heap.settle()  # start-up is over: what it built is frozen (moot.cli.heap)
        return watcher

    return start


def exit_code_of(result: RunResult) -> int:
    """0 completed, 1 failed, 141 the output closed; stopped by a signal: 128 + its number, and
    a line saying how to continue."""
    if result.stop_reason == OUTPUT_CLOSED:
        return EXIT_PIPE
    if result.status == "interrupted":
        sig = signal_of(result.stop_reason) or signal.SIGINT
        print(terminal_safe(f"{headline(sig)}: run the same command again to continue ({result.folder})"),
              file=sys.stderr)
        return exit_code(sig)
    if result.status == "failed":
        return EXIT_FAILED
    if result.unparsed:
        print(f"failed: {result.unparsed}", file=sys.stderr)
        return EXIT_UNPARSED
    return EXIT_OK
