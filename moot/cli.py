"""Command line: `python run_conference.py SCENARIO [options]` and subcommands.

One function per subcommand; `main(argv)` returns the exit code (0 ok, 1 run failed,
2 bad input, 130 interrupted) so tests can call it in-process.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import asyncio
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

from moot.cli_args import add_backend_args, add_model_arg
from moot.models.factory import BackendOptions
from moot.resume import ResumeError
from moot.scenario import ScenarioError
from moot.transcript import TranscriptError
from moot.yamlsource import SourceError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
INPUT_ERRORS = (ScenarioError, SourceError, ResumeError, TranscriptError, ValueError)


SUBCOMMAND_HELP = {  # one line each in the top-level help; `run_conference.py NAME --help` for more
    "replay": "show a saved run (TRANSCRIPT) in the terminal as it happened",
    "export": "a readable Markdown/HTML document of a run, from its transcript",
    "score": "re-score a transcript's topics with another evaluator, without re-running it",
    "validate": "check scenario files without running anything",
    "new": "write a commented starter scenario for a protocol",
    "schema": "the JSON Schema of the scenario format (for editors)",
    "report": "tables, per-class metrics, confusion matrices and plots of finished batch runs",
    "judge-eval": "the conference judge alone as a zero-shot stance/polarity classifier on a dataset",
}
SUBCOMMANDS = tuple(SUBCOMMAND_HELP)

RUN_DESCRIPTION = """Run a moot scenario.

A decision-conference scenario (the options below) runs one conference and saves its transcript.
A per-item protocol scenario (protocol: cola, s2mad, negotiation) runs one item or a dataset and
has its own options; see `run_conference.py SCENARIO --help` with such a scenario:
  --input KEY=VALUE   one item's input (e.g. text=..., target=...), overriding the scenario's
  --dataset DATA.yaml run over a dataset as a resumable batch in --out DIR
  --limit N           first N items;  --concurrency N  model calls in flight at most
  --resume            continue the run in --out;  --cache FILE / --no-cache  the reply cache"""


def run_epilog() -> str:
    width = max(map(len, SUBCOMMANDS))
    lines = [f"  {name:<{width}}  {text}" for name, text in SUBCOMMAND_HELP.items()]
    return ("subcommands (run_conference.py NAME --help for each):\n" + "\n".join(lines)
            + "\n\nexamples:\n  run_conference.py scenarios/drug_policy.yaml"
              "\n  run_conference.py scenarios/cola.yaml --dataset datasets/vast.yaml --limit 50"
              "\n  run_conference.py report runs/cola-vast")


def run_parser() -> argparse.ArgumentParser:
    usage = ("%(prog)s [options] SCENARIO\n       %(prog)s SCENARIO --dataset DATA.yaml [--limit N] ..."
             "\n       %(prog)s {" + ",".join(SUBCOMMANDS) + "} ...")
    p = argparse.ArgumentParser(prog="run_conference.py", usage=usage, description=RUN_DESCRIPTION,
                                epilog=run_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", type=Path, help="scenario YAML file")
    add_model_arg(p, "model for all agents (SPEC) or one role/agent (ROLE=SPEC); "
                     "SPEC: local, local:PATH.gguf, openai:MODEL, ollama:MODEL, scripted")
    p.add_argument("--out", type=Path, help="transcript path (default: transcripts/NAME-TIME.jsonl)")
    p.add_argument("--resume", type=Path, metavar="TRANSCRIPT", help="continue a failed/killed run")
    add_backend_args(p)
    p.add_argument("--quiet", action="store_true", help="print only the summary")
    return p


def cmd_run(argv: Sequence[str]) -> int:
    from moot.console import ConsolePrinter
    from moot.scenario import load_scenario
    from moot.session import RunRequest, prepare
    from moot.summary import summary_lines

    from moot.protocols import PROTOCOLS, protocol_in_argv

    if protocol_in_argv(argv) in PROTOCOLS:  # per-item protocols (COLA, ...) have their own runner
        from moot.protocols.cli import run

        return run(argv)
    args = run_parser().parse_args(argv)
    request = RunRequest(args.scenario, args.model, args.out, args.resume,
                         BackendOptions(args.base_url, args.api_key, args.ollama_host))
    scenario = load_scenario(args.scenario)
    topics = scenario.topics
    printer = ConsolePrinter(topics)
    runner = prepare(request, (lambda events: None) if args.quiet else printer, scenario=scenario)
    try:
        outcome = asyncio.run(runner.run())
    except KeyboardInterrupt:  # asyncio re-raises Ctrl-C after run() recorded the interruption
        if runner.outcome is None:
            raise
        outcome = runner.outcome
    finally:
        runner.writer.close()
    print()
    for line in summary_lines(runner.events, topics):
        print(line)
    print(f"transcript: {outcome.path}")
    if outcome.status == "failed":
        print(f"run failed: {outcome.stop_reason} (resume with --resume {outcome.path})", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_INTERRUPTED if outcome.status == "interrupted" else EXIT_OK


def subcommand(name: str) -> Callable[[Sequence[str]], int]:
    """Subcommands live in moot.commands.<name>, each exposing `run(argv) -> exit code`."""
    module = importlib.import_module(f"moot.commands.{name.replace('-', '_')}")
    return module.run


def quiet_autogen_logs() -> None:
    """AutoGen logs agent exceptions with tracebacks; moot records the cause in the transcript."""
    for name in ("autogen_core", "autogen_agentchat", "autogen_ext"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    quiet_autogen_logs()
    try:
        if argv and argv[0] in SUBCOMMANDS:
            return subcommand(argv[0])(argv[1:])
        return cmd_run(argv)
    except INPUT_ERRORS as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def main_exit() -> None:
    """Console-script entry point (`moot ...`)."""
    sys.exit(main())
