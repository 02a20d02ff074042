"""Command-line options every subcommand spells and means the same way.

`--model [KEY=]SPEC`, `--out`, the backend endpoints and key, `--concurrency`: one definition each,
used by `run`, `score`, `judge-eval` and the rest.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Mapping, NoReturn, Optional, Sequence

from moot.api.options import RunOptions, prices_of, trace
from moot.errors import UsageError, nearest
from moot.safety.utf8 import shown, undecodable

if TYPE_CHECKING:
    from autogen_core.models import ChatCompletionClient

    from moot.api.seats import SeatSpec
    from moot.cli.seat import TerminalPerson


def summary(doc: Optional[str]) -> str:
    """A command's description for --help: its module docstring's first paragraph, whole (its first
    line alone can stop mid-sentence)."""
    return (doc or "").strip().split("\n\n")[0]


class Parser(argparse.ArgumentParser):
    """argparse with bad input as one line (not the usage block), naming the nearest option for a
    misspelt one: `moot run: unrecognized arguments: --modle (did you mean --model?)`."""

    def error(self, message: str) -> NoReturn:
        hint = ""
        unknown = [w for w in message.partition(":")[2].split() if w.startswith("--")]
        if message.startswith("unrecognized arguments") and unknown:
            hint = nearest(unknown[0].split("=")[0], [o for o in self._option_string_actions if o.startswith("--")])
        self.exit(2, f"error: {self.prog}: {message}{hint} ({self.prog} --help)\n")


def refuse_undecodable_argv(argv: Sequence[str]) -> None:
    """One line, before anything is written, for an argument that is not UTF-8 (moot.safety.utf8),
    naming the option it follows."""
    for number, word in enumerate(argv):
        if undecodable(word):
            option = f"{argv[number - 1]} " if number and argv[number - 1].startswith("-") else ""
            raise UsageError(f"{option}'{shown(word)}': not UTF-8; moot keeps names and values as UTF-8 text "
                             "(rename the file, or type the value in UTF-8)")


MODEL_HELP = ("model for every role (SPEC) or one role, agent or group (KEY=SPEC), repeatable; SPEC: "
              "local, local:PATH.gguf, openai:MODEL, anthropic:MODEL, ollama:MODEL, scripted[:TOKENS]")


def add_model(p: argparse.ArgumentParser, help: str = MODEL_HELP) -> None:
    p.add_argument("--model", action="append", default=[], metavar="[KEY=]SPEC", help=help)


def add_out(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("--out", help=help)


def add_backends(p: argparse.ArgumentParser) -> None:
    """Where the model servers are; beats the scenario's `backends:`."""
    p.add_argument("--base-url", action="append", default=[], metavar="URL",
                   help="OpenAI-compatible endpoint (repeat for a pool serving the same model; "
                        "default: the scenario's, else $OPENAI_BASE_URL)")
    p.add_argument("--api-key", help="API key (default: the scenario's backends.openai.api_key_env, "
                                     "else $OPENAI_API_KEY); never recorded or printed")
    p.add_argument("--ollama-host", action="append", default=[], metavar="URL",
                   help="Ollama server (repeat for a pool; default: the scenario's, else $OLLAMA_HOST)")


def add_engine(p: argparse.ArgumentParser, concurrency: int = 4) -> None:
    p.add_argument("--concurrency", type=positive_int, default=concurrency,
                   help=f"the most model calls in flight per backend endpoint, fewer while it answers 429s or "
                        f"times out (default {concurrency})")
    p.add_argument("--max-cost", type=float, metavar="USD",
                   help="stop before the run's spend (earlier invocations' too) could exceed USD; a higher limit "
                        "continues it (needs every model's price: --price, --prices or backends.NAME.prices)")
    p.add_argument("--price", type=float, nargs=2, metavar=("PROMPT", "COMPLETION"),
                   help="prices per million prompt and completion tokens of every model: each call's recorded "
                        "cost, --max-cost (and --plan's cost)")
    p.add_argument("--prices", metavar="FILE", help="a price file: {SPEC: {prompt: USD, completion: USD, batch: "
                                                      "SHARE}} per million tokens")
    p.add_argument("--no-cache", action="store_true",
                   help="do not answer from the run folder's reply cache (still records replies)")
    p.add_argument("--trace", action="store_true",
                   help="send spans of the run, its units and model calls to an OpenTelemetry collector (OTLP/HTTP, "
                        "$OTEL_EXPORTER_OTLP_ENDPOINT, default localhost:4318; also MOOT_TRACE=1); needs "
                        "pip install 'moot[tracing]'")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def run_options(args: argparse.Namespace, clients: Optional[Mapping[str, "ChatCompletionClient"]] = None) -> RunOptions:
    """The engine and backend options a command was given, as the API's RunOptions; seats a
    person takes (`--human`) are answered at the terminal. Tracing starts here when asked for."""
    seats: tuple["SeatSpec", ...] = ()
    person: Optional["TerminalPerson"] = None
    trace(args.trace)
    if getattr(args, "human", []):
        from moot.api.seats import seat_specs
        from moot.cli.seat import TerminalPerson

        seats, person = seat_specs(args.human), TerminalPerson()
    return RunOptions(
        concurrency=args.concurrency, cache=not args.no_cache, base_urls=tuple(args.base_url),
        api_key=args.api_key, ollama_hosts=tuple(args.ollama_host),
        resume=getattr(args, "resume", False), allow_model_change=getattr(args, "allow_model_change", False),
        clients=clients, seats=seats, person=person, max_cost=getattr(args, "max_cost", None),
        prices=prices_of(getattr(args, "price", None), getattr(args, "prices", None)),
        batch=getattr(args, "batch", False),
    )
