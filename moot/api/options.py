"""How runs are carried out, apart from what they run: model servers, concurrency, the reply cache,
resuming. One `RunOptions` serves every run of a notebook, or every cell of an experiment.

`models` (which model plays which role) is part of what runs: `SPEC` for every role, or
`{KEY: SPEC}` for a role, an agent or a group, as `--model [KEY=]SPEC` on the command line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Sequence, TypeVar, Union

from moot.errors import UsageError

if TYPE_CHECKING:
    from autogen_core.models import ChatCompletionClient

    from moot.kit.seats import Person, SeatSpec
    from moot.models.batch import Batcher
    from moot.models.cache import NoCache, ReplyCache
    from moot.models.prices import Prices
    from moot.models.provider import BackendOptions
    from moot.models.providers import Backends

V = TypeVar("V")
PathLike = Union[str, "os.PathLike[str]"]
Models = Union[str, Sequence[str], Mapping[str, str]]  # SPEC | ["KEY=SPEC", ...] | {KEY: SPEC}


@dataclass(frozen=True)
class RunOptions:
    """How a run is carried out (the command line's engine and backend options).

    `cache`: answer from and record in the run folder's reply cache (True), in another cache file
    shared by several runs (a path: an experiment's cells), or not at all (False: `--no-cache`).
    `base_urls` / `ollama_hosts`: endpoints (several: a pool serving the same model); they beat the
    scenario's `backends:`, which beats the environment. `api_key` is used, never recorded.
    `clients`: ready model clients by role or spec instead of building them (tests' doubles).
    `seats`: seats a person takes (`--human SEAT`), answered by `person` (moot.kit.seats).
    `prices`: what calls cost (moot.models.prices: `--price`, a price file; the scenario's
    `backends.NAME.prices` otherwise); `max_cost`: the run's spend in US dollars, earlier invocations'
    included, that no call may take it over (moot.models.budget: the run stops, resumably).
    `batch`: send the calls through the provider's batch API in waves (`--batch`, moot.models.batch),
    journaled in the run folder (True), or through a Batcher several runs share (an experiment's
    cells, which then run together: one wave holds every cell's calls)."""

    concurrency: int = 4
    cache: Union[bool, PathLike] = True
    base_urls: tuple[str, ...] = ()
    api_key: Optional[str] = field(default=None, repr=False)
    ollama_hosts: tuple[str, ...] = ()
    resume: bool = False
    allow_model_change: bool = False
    clients: Optional[Mapping[str, "ChatCompletionClient"]] = field(default=None, repr=False, compare=False)
    seats: tuple["SeatSpec", ...] = ()
    person: Optional["Person"] = field(default=None, repr=False, compare=False)
    max_cost: Optional[float] = None
    prices: Optional["Prices"] = field(default=None, compare=False)
    batch: Union[bool, "Batcher"] = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise UsageError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.max_cost is not None and self.max_cost < 0:
            raise UsageError(f"--max-cost must be at least 0, got {self.max_cost:g}")


def backend_options(options: RunOptions, backends: Optional["Backends"] = None) -> "BackendOptions":
    """Each backend's options: the scenario's `backends:` block, its endpoints replaced by the
    options' (`base_urls`, `ollama_hosts`), which beat the environment; and the API key."""
    from moot.models.provider import BackendOptions
    from moot.models.providers import PROVIDERS, Backends
    from moot.safety.secrets import register

    given = {"openai": options.base_urls, "ollama": options.ollama_hosts}  # RunOptions' endpoint options
    blocks = {}
    for name, block in (backends or Backends()):
        key, endpoints = PROVIDERS.get(name).endpoint_key, given.get(name)
        blocks[name] = block.model_copy(update={key: list(endpoints)}) if key and endpoints else block
    register(options.api_key)
    return BackendOptions(blocks, options.api_key)


def prices_of(price: Optional[tuple[float, float]] = None, file: Optional[PathLike] = None) -> "Prices":
    """What model calls cost (RunOptions.prices): one price per million prompt and completion
    tokens for every model (`--price PROMPT COMPLETION`), else a price file's
    `{SPEC: {prompt: USD, completion: USD, batch: SHARE}}` (`--prices FILE`); neither: none."""
    from moot.models.prices import prices_of as read

    return read(price, Path(file) if file is not None else None)


def trace(asked: bool = True) -> None:
    """From now on, send spans of runs, their units and model calls to an OpenTelemetry collector
    (OTLP/HTTP, $OTEL_EXPORTER_OTLP_ENDPOINT), when `asked` or $MOOT_TRACE=1 (`--trace`); needs
    `pip install 'moot[tracing]'` (a MootError says so)."""
    from moot import tracing

    if tracing.wanted(asked) and tracing.TRACER is None:
        tracing.start()


def reply_cache(options: RunOptions, folder_cache: Path) -> "ReplyCache | NoCache":
    """The reply cache a run answers from and records in (see RunOptions.cache)."""
    from moot.kit.seats import Person, SeatSpec
    from moot.models.cache import NoCache, ReplyCache

    if options.cache is False:
        return NoCache()
    return ReplyCache(folder_cache if options.cache is True else Path(options.cache))


def one(value: object) -> list[str]:
    return [str(value)]


def key_items(given: Union[None, str, Sequence[str], Mapping[str, V]],
              texts: Callable[[V], list[str]] = one) -> list[str]:
    """`{KEY: VALUE}` as the command line's `KEY=TEXT` items, one per text of the value
    (`texts`); items given as such (or one item) stay as they are."""
    if given is None:
        return []
    if isinstance(given, str):
        return [given]
    if isinstance(given, Mapping):
        return [f"{key}={text}" for key, value in given.items() for text in texts(value)]
    return list(given)
