"""Command-line options shared by the run commands, so each is spelled and explained once.

Used by the conference runner (moot.cli), the per-item protocol runner (moot.protocols.cli)
and `judge-eval`.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_model_arg(p: argparse.ArgumentParser, help: str) -> None:
    """`--model [ROLE=]SPEC`, repeatable: one spec for all, or one role at a time."""
    p.add_argument("--model", action="append", default=[], metavar="[ROLE=]SPEC", help=help)


def add_backend_args(p: argparse.ArgumentParser) -> None:
    """Where the model servers are; beats the scenario's `backends:`."""
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    p.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY); never recorded")
    p.add_argument("--ollama-host", help="Ollama server (default: $OLLAMA_HOST)")


def add_batch_args(p: argparse.ArgumentParser, out_help: str, cache_help: str) -> None:
    """A dataset run: how much, how fast, where it is kept, and its reply cache."""
    p.add_argument("--limit", type=int, help="first N items of the dataset (after filters)")
    p.add_argument("--concurrency", type=int, default=4, help="model calls in flight at most (default 4)")
    p.add_argument("--out", type=Path, help=out_help)
    p.add_argument("--resume", action="store_true", help="continue the run in --out (the default anyway)")
    p.add_argument("--cache", type=Path, help=cache_help)
    p.add_argument("--no-cache", action="store_true", help="send every call to the model")
