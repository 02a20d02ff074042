"""The one command line: `moot COMMAND ...`, and `python run_conference.py` as the same program.

`moot SCENARIO ...` (a file or a bundled scenario's name) is short for `moot run SCENARIO ...`.
Each subcommand is a module of this package exposing `run(argv) -> exit code`; a protocol may add
commands of its own (moot.contract.commands), run by moot.cli.dataset_command. `main(argv)`
returns the exit code so tests call it in-process.

Exit codes: 0 done, 1 a run failed (its transcript says why; run the same command again to
continue) or moot hit a bug (one line; MOOT_DEBUG=1 for the traceback), 2 bad input (nothing was
written), 3 the environment refused (disk full, read-only, permission, a limit, memory), 130 interrupted
(Ctrl-C; 143 SIGTERM, 129 SIGHUP; resumable), 141 the output was closed (e.g. `| head`; resumable).
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import traceback
import warnings
from functools import partial
from pathlib import Path
from typing import Callable, Optional, Sequence

from moot.cli import heap
from moot.api.streams import silence
from moot.errors import EXIT_ENVIRONMENT, EXIT_FAILED, EXIT_OK, EXIT_PIPE, EXIT_USAGE, MootError
from moot.safety.diskio import (
    OUT_OF_MEMORY, environment_message, is_environment_error, out_of_memory, report_unraisable,
)
from moot.safety.secrets import describe, redact
from moot.safety.signals import exit_code, headline, install
from moot.safety.startup import startup_failure
from moot.safety.neutral import terminal_safe

COMMANDS = {  # name -> one line for the top-level help; `moot NAME --help` for more
    "run": "run a scenario: one conference, one item, a dataset, or a batch of conferences",
    "replay": "show a saved run (a run folder or a transcript) in the terminal as it happened",
    "export": "a readable Markdown or HTML document of a run",
    "score": "re-run a protocol's deciding role with another model on a saved run",
    "annotate": "rate a run's units blind, at the terminal or in the browser (verdicts, scores, labels), for `moot report`",
    "report": "tables, per-class metrics and plots of finished runs (items and conferences) or an experiment",
    "compare": "two runs of labelled items paired on their items: delta with its interval, paired test",
    "view": "a local web viewer of every run under a folder: live, filterable, with comparison (--bundle: static)",
    "validate": "check scenario, dataset and experiment files without running anything",
    "convert": "a rumour dataset's public release (ACLR4RUMOR, RumourEval 2019) to one thread per line",
    "new": "write a commented starter scenario for a protocol",
    "llama-server": "llama.cpp's own server, built once from a registry package, serving a GGUF on loopback",
    "schema": "the JSON Schema of the scenario format (for editors)",
}


def protocol_commands() -> dict[str, str]:
    """The protocols' own commands (name -> one line); reading them imports the protocols."""
    from moot.api.commands import protocol_commands as commands

    return {name: command.help for name, command in commands().items()}


def usage() -> str:
    own = protocol_commands()
    width = max(map(len, [*COMMANDS, *own]))
    lines = [f"  {name:<{width}}  {text}" for name, text in COMMANDS.items()]
    extra = [f"  {name:<{width}}  {text}" for name, text in own.items()]
    return ("usage: moot COMMAND [options]   (moot COMMAND --help for each)\n"
            "       moot SCENARIO [options]  (short for `moot run SCENARIO`)\n\ncommands:\n" + "\n".join(lines)
            + ("\n\ncommands of the protocols:\n" + "\n".join(extra) if extra else "")
            + "\n\nexamples:\n  moot run drug_policy\n  moot run cola --dataset demo-stance --limit 12"
              "\n  moot replay transcripts/drug_policy\n  moot report transcripts/cola-demo-stance")


SETTLE_WHEN_RUNNING = {"run"}  # its start-up goes on to the dataset and backends (moot.cli.run)


def command(name: str) -> Callable[[Sequence[str]], int]:
    """The command's `run`; a protocol's own command runs like `run` (moot.cli.dataset_command)."""
    if name not in COMMANDS:
        from moot.cli import dataset_command

        return partial(dataset_command.run, name)
    run: Callable[[Sequence[str]], int] = importlib.import_module(f"moot.cli.{name.replace('-', '_')}").run
    if name not in SETTLE_WHEN_RUNNING:
        heap.settle()
    return run


def dispatch(argv: list[str]) -> int:
    from moot.api.bundled import scenario_names
    from moot.cli.options import refuse_undecodable_argv
    from moot.errors import UsageError, nearest

    refuse_undecodable_argv(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return EXIT_OK if argv else EXIT_USAGE
    if argv[0] == "--version":
        from moot.version import __version__

        print(f"moot {__version__}")
        return EXIT_OK
    if argv[0] in COMMANDS:
        return command(argv[0])(argv[1:])
    first = argv[0]
    if first in protocol_commands():
        return command(first)(argv[1:])
    if first.startswith("-") or Path(first).exists() or first.endswith((".yaml", ".yml")) \
            or Path(first).stem in scenario_names():
        return command("run")(argv)
    names = [*COMMANDS, *protocol_commands()]
    raise UsageError(f"unknown command or scenario {first!r}{nearest(first, names + scenario_names())} "
                     f"(commands: {', '.join(names)}; bundled scenarios: moot run --list)")


def quiet_library_logs() -> None:
    """AutoGen logs agent exceptions with tracebacks; moot records the cause in the transcript.
    Libraries' warnings about what a server answered (a model name it reports differently, usage
    fields of the wrong type) are not the user's to act on: the call's cause says what failed.
    matplotlib's advice (a cache folder it cannot write, fonts it is still indexing) is not either:
    a successful command prints nothing on stderr."""
    for name in ("autogen_core", "autogen_agentchat", "autogen_ext", "asyncio", "matplotlib"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", message="Resolved model mismatch", category=UserWarning)
    warnings.filterwarnings("ignore", message="Pydantic serializer warnings", category=UserWarning)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    quiet_library_logs()
    try:
        return dispatch(argv)
    except MootError as exc:  # one line; its class says the exit code
        say_error(f"error: {exc}")
        return exc.exit_code
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM / SIGHUP (moot.safety.signals)
        print(headline(exc), file=sys.stderr)
        return exit_code(exc)
    except BrokenPipeError:
        silence(sys.stdout)
        return EXIT_PIPE
    except (OSError, MemoryError) as exc:
        if not is_environment_error(exc):
            return internal_error(exc)
        say_error(f"error: {environment_message(exc)}")
        return keep(exc, EXIT_ENVIRONMENT)
    except Exception as exc:  # noqa: BLE001 - a bug: one line, the traceback on request
        return internal_error(exc)


def internal_error(exc: BaseException) -> int:
    """An error moot has no message for: a dependency that cannot load (one line naming it), else
    a bug (one line); secrets redacted; MOOT_DEBUG=1 adds the (redacted) traceback. The run folder
    stays as it was: run the same command again to continue. Imports nothing that could fail again."""
    if os.environ.get("MOOT_DEBUG"):
        say_error("".join(traceback.format_exception(exc)), end="")
    if out_of_memory(exc):  # e.g. a library that could not be loaded for want of memory
        print(f"error: {OUT_OF_MEMORY}", file=sys.stderr)
        return keep(exc, EXIT_ENVIRONMENT)
    whose = "the Python interpreter or a library failed, e.g. for want of memory" if isinstance(exc, SystemError) \
        else "a bug in moot"
    line = startup_failure(exc) or f"internal error: {describe(exc)} ({whose}; MOOT_DEBUG=1 shows the traceback)"
    say_error(f"error: {line}")
    return keep(exc, EXIT_FAILED)


def say_error(text: str, end: str = "\n") -> None:
    """An error on stderr: secrets redacted, what others wrote in it neutralised (moot.safety.neutral)."""
    print(terminal_safe(redact(text)), file=sys.stderr, end=end)


LAST_RESORT = f"error: {OUT_OF_MEMORY}\n".encode()
KEPT: list[BaseException] = []  # see keep; a list only when moot is the process (main_exit)
_PROCESS = {"entry": False}


def keep(exc: BaseException, code: int) -> int:
    """`code`. When moot is the process, `exc` (and all its traceback holds) stays alive until the
    process ends (main_exit leaves without clean-up): freeing it would run finalizers that, when
    memory ran out, fail with a screen of "Exception ignored" after the one line."""
    if _PROCESS["entry"]:
        KEPT.append(exc)
    return code


def main_exit() -> None:
    """The process's entry point (the `moot` script, `python -m moot`, `python run_conference.py`)."""
    install()
    heap.hold()
    sys.unraisablehook = report_unraisable
    _PROCESS["entry"] = True
    try:
        code = main()
    except (MemoryError, SystemError):  # an error's own handler failed, as when memory ran out:
        os.write(2, LAST_RESORT)  # the line as built at start-up, unbuffered, and leave
        os._exit(EXIT_ENVIRONMENT)
    if code != EXIT_OK:  # leave without the interpreter's clean-up (what moot writes is closed), which may
        for stream in (sys.stdout, sys.stderr):  # fail the same way (out of memory: a screen of "Exception ignored")
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - leaving anyway
                pass
        os._exit(code)
    sys.exit(code)
