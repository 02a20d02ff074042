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

    from moot.engine.seats import Person, SeatSpec
    from moot.models.cache import NoCache, ReplyCache
    from moot.models.factory import BackendOptions
    from moot.scenario.blocks import Backends

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
    `seats`: seats a person takes (`--human SEAT`), answered by `person` (moot.engine.seats)."""

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

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise UsageError(f"concurrency must be at least 1, got {self.concurrency}")


def backend_options(options: RunOptions, backends: Optional["Backends"] = None) -> "BackendOptions":
    """Endpoints and key: the options beat the scenario's `backends:`, which beats the environment.
    The scenario names the environment variable holding its key (`api_key_env`)."""
    from moot.models.factory import BackendOptions
    from moot.safety.secrets import register
    from moot.scenario.blocks import Backends, endpoint_list

    b = backends or Backends()
    key = options.api_key or os.environ.get(b.openai.api_key_env)
    register(key)
    return BackendOptions(
        openai_base_urls=options.base_urls or endpoint_list(b.openai.base_url),
        openai_api_key=key,
        ollama_hosts=options.ollama_hosts or endpoint_list(b.ollama.host),
        local_n_ctx=b.local.n_ctx, local_n_threads=b.local.n_threads,
        local_n_gpu_layers=b.local.n_gpu_layers, local_kind=b.local.kind,
        local_extra_buffers=b.local.extra_buffers,
        openai_kind=b.openai.kind, ollama_kind=b.ollama.kind,
    )


def reply_cache(options: RunOptions, folder_cache: Path) -> "ReplyCache | NoCache":
    """The reply cache a run answers from and records in (see RunOptions.cache)."""
    from moot.engine.seats import Person, SeatSpec
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
