"""Protocols by name, each checked as it registers; `PROTOCOLS` holds every protocol a process knows.

Registering a protocol registers its event types in the log (moot.log.registry). A protocol may be
declared by name and module instead, and is then imported when first asked for: a run imports
its own protocol, not every one (start-up time). A name no imported module registered is looked
for among the installed protocols (moot.plugins), so a transcript or a run folder opens in any
process.
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping, Optional, Sequence

from pydantic import BaseModel

from moot.contract.check import check
from moot.contract.commands import DatasetCommand
from moot.contract.protocol import Protocol, ProtocolError
from moot.log.events import Json, RunStarted
from moot.log.registry import EVENTS, EventRegistry
from moot.plugins import declare_builtin, find_installed
from moot.scenario.load import use_schemas
from moot.views.unit import UnitView

AnyProtocol = Protocol[Any]  # a registry holds protocols of every scenario type


class Registry:
    """Protocols by name, each checked as it registers."""

    def __init__(self, protocols: Sequence[AnyProtocol] = (), events: EventRegistry = EVENTS,
                 installed: bool = False):
        self._protocols: dict[str, AnyProtocol] = {}
        self._order: dict[str, None] = {}  # every name, registered or declared, in the order given
        self._declared: dict[str, str] = {}  # name -> module whose PROTOCOL it is, not imported yet
        self._events, self._installed = events, installed  # installed: a miss looks among moot.plugins
        for protocol in protocols:
            self.register(protocol)

    def register(self, protocol: AnyProtocol) -> AnyProtocol:
        check(protocol)
        if protocol.name in self._protocols:
            raise ProtocolError(f"protocol {protocol.name!r} is registered twice")
        taken = {c.name for p in self._protocols.values() for c in p.commands}
        if taken & {command.name for command in protocol.commands}:
            raise ProtocolError(f"{protocol.name}: a command of its is another protocol's")
        try:
            self._events.register(*protocol.events)
        except ValueError as exc:
            raise ProtocolError(f"{protocol.name}: {exc}") from None
        self._protocols[protocol.name] = protocol
        self._order[protocol.name] = None
        self._declared.pop(protocol.name, None)
        return protocol

    def declare(self, name: str, module: str) -> None:
        """`module`'s PROTOCOL, named `name`, registered when first asked for."""
        if name in self._order:
            raise ProtocolError(f"protocol {name!r} is registered twice")
        self._declared[name] = module
        self._order[name] = None

    def _import(self, name: str) -> None:
        protocol = importlib.import_module(self._declared[name]).PROTOCOL
        if protocol.name != name:
            raise ProtocolError(f"{self._declared[name]} declares protocol {name!r} but defines {protocol.name!r}")
        self.register(protocol)

    def load_all(self) -> None:
        """Import every declared protocol (what lists them, their commands and events need)."""
        for name in list(self._declared):
            if name in self._declared:
                self._import(name)

    def get(self, name: str) -> AnyProtocol:
        if name not in self:
            raise KeyError(name)
        return self._protocols[name]

    def __contains__(self, name: object) -> bool:
        if name not in self._order and self._installed:
            declare_builtin()  # moot's own: only the one asked for is imported
        if name not in self._order and self._installed:
            find_installed()
        if name in self._declared:
            self._import(str(name))
        return name in self._protocols

    def names(self, from_yaml: bool = True) -> list[str]:
        self.load_all()
        return [n for n in self._order if self._protocols[n].from_yaml or not from_yaml]

    def all(self, from_yaml: bool = True) -> list[AnyProtocol]:
        return [self._protocols[n] for n in self.names(from_yaml)]

    def schema(self, name: str) -> Optional[type[BaseModel]]:
        """The scenario model of a protocol a scenario file may name (None: no such protocol)."""
        return self.get(name).scenario if name in self and self.get(name).from_yaml else None

    def commands(self) -> dict[str, DatasetCommand]:
        """The protocols' own command-line entries by name (moot.contract.commands)."""
        return {c.name: c for p in self.all(from_yaml=False) for c in p.commands}


PROTOCOLS = Registry(installed=True)


def load_installed() -> None:
    """Register every installed protocol and so its event types: what the log asks for when it
    meets an event type no imported protocol registered (moot.log.registry), and a listing of all."""
    find_installed()
    PROTOCOLS.load_all()


EVENTS.find_with(load_installed)  # the log asks the registry, never imports it
use_schemas(PROTOCOLS)  # so do scenario files for their `protocol:`


def view_of(started: RunStarted) -> UnitView:
    """How a recorded unit reads: its protocol's view, or an item's for a protocol not installed."""
    scenario: Mapping[str, Json] = started.scenario
    if started.protocol in PROTOCOLS:
        return PROTOCOLS.get(started.protocol).view_of(scenario)
    return UnitView(scenario)


def result_name(protocol: str) -> str:
    """What a protocol calls its units' result (`stance`, `veracity`, ...)."""
    return PROTOCOLS.get(protocol).result_name if protocol in PROTOCOLS else "prediction"
