"""The model backends by name, one line each (moot.models.provider says what a backend declares).

Adding a backend: its package `moot/models/backends/NAME/` (`provider.py`: its options, how it
builds a client, what it checks before a run; `client.py` and whatever else only it uses) and one
line below; the scenario's `backends:` block, spec parsing, dispatch, preflight and the recorded
settings are derived from this list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from pydantic import create_model

from moot.models.backends.anthropic.provider import ANTHROPIC
from moot.models.backends.local.provider import LOCAL
from moot.models.backends.ollama.provider import OLLAMA
from moot.models.backends.openai.provider import OPENAI
from moot.models.provider import NoOptions, Options, Provider
from moot.models.backends.scripted.provider import SCRIPTED

AnyProvider = Provider[Any]


class Providers:
    """Backends by name, in the order given (the order of `backends:` keys and recorded settings)."""

    def __init__(self, providers: Sequence[AnyProvider]):
        self._providers = {p.name: p for p in providers}
        if len(self._providers) != len(providers):
            raise ValueError("a backend is registered twice")

    def get(self, name: str) -> AnyProvider:
        return self._providers[name]

    def __contains__(self, name: object) -> bool:
        return name in self._providers

    def names(self) -> tuple[str, ...]:
        return tuple(self._providers)

    def all(self) -> list[AnyProvider]:
        return list(self._providers.values())


PROVIDERS = Providers([OPENAI, ANTHROPIC, OLLAMA, LOCAL, SCRIPTED])


class BackendsBlock(Options):
    """Where the model servers are."""


if TYPE_CHECKING:
    Backends = BackendsBlock
else:  # one key per backend with options, each its own options block
    Backends = create_model("Backends", __base__=BackendsBlock, __module__=__name__, **{
        p.name: (p.options, p.options()) for p in PROVIDERS.all() if p.options is not NoOptions})
    Backends.__doc__ = BackendsBlock.__doc__
