"""Protocols by name, each checked as it registers; `PROTOCOLS` holds every protocol a process knows.

Registering a protocol registers its event types in the log (moot.log.registry). A name no
imported module registered is looked for among the installed protocols (moot.plugins), so a
transcript or a run folder opens in any process.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from moot.contract.check import check
from moot.contract.commands import DatasetCommand
from moot.contract.protocol import Protocol, ProtocolError
from moot.log.events import Json, RunStarted
from moot.log.registry import EVENTS, EventRegistry
from moot.plugins import load_protocols
from moot.views.unit import UnitView

AnyProtocol = Protocol[Any]  # a registry holds protocols of every scenario type


class Registry:
    """Protocols by name, each checked as it registers."""

    def __init__(self, protocols: Sequence[AnyProtocol] = (), events: EventRegistry = EVENTS,
                 installed: bool = False):
        self._protocols: dict[str, AnyProtocol] = {}
        self._events, self._installed = events, installed  # installed: a miss looks among moot.plugins
        for protocol in protocols:
            self.register(protocol)

    def register(self, protocol: AnyProtocol) -> AnyProtocol:
        check(protocol)
        if protocol.name in self._protocols:
            raise ProtocolError(f"protocol {protocol.name!r} is registered twice")
        if set(self.commands()) & {command.name for command in protocol.commands}:
            raise ProtocolError(f"{protocol.name}: a command of its is another protocol's")
        try:
            self._events.register(*protocol.events)
        except ValueError as exc:
            raise ProtocolError(f"{protocol.name}: {exc}") from None
        self._protocols[protocol.name] = protocol
        return protocol

    def get(self, name: str) -> AnyProtocol:
        if name not in self:
            raise KeyError(name)
        return self._protocols[name]

    def __contains__(self, name: object) -> bool:
        if name not in self._protocols and self._installed:
            load_protocols()
        return name in self._protocols

    def names(self, from_yaml: bool = True) -> list[str]:
        return [n for n, p in self._protocols.items() if p.from_yaml or not from_yaml]

    def all(self, from_yaml: bool = True) -> list[AnyProtocol]:
        return [self._protocols[n] for n in self.names(from_yaml)]

    def commands(self) -> dict[str, DatasetCommand]:
        """The protocols' own command-line entries by name (moot.contract.commands)."""
        return {c.name: c for p in self._protocols.values() for c in p.commands}


PROTOCOLS = Registry(installed=True)


def view_of(started: RunStarted) -> UnitView:
    """How a recorded unit reads: its protocol's view, or an item's for a protocol not installed."""
    scenario: Mapping[str, Json] = started.scenario
    if started.protocol in PROTOCOLS:
        return PROTOCOLS.get(started.protocol).view_of(scenario)
    return UnitView(scenario)


def result_name(protocol: str) -> str:
    """What a protocol calls its units' result (`stance`, `veracity`, ...)."""
    return PROTOCOLS.get(protocol).result_name if protocol in PROTOCOLS else "prediction"
