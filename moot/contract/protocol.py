"""The protocol contract: what every deliberation protocol declares, checked when it registers.

A protocol (a decision conference, COLA, S2MAD, negotiation, multi-agent debate, ...) is one
`Protocol` object, registered by name in moot.protocols (like a Concordia prefab or an Inspect
model API). It names:

- its scenario schema (a pydantic model whose `protocol` field is the protocol's name), which
  also says which roles take a model and with which settings;
- its speaker-selection policy (a pure function in moot.speaker_selection);
- its prompt templates (agents/prompts/NAME.yaml) and example scenario (scenarios/NAME.yaml);
- what one input is (`inputs`: nothing for a conference, whose scenario is the input; a text and
  target for COLA, ...) and how a dataset row fills it;
- `run`: how one unit (a conference, or one item) runs to an Outcome, asking models through the
  UnitContext it is given (moot.engine.context), which records every call;
- `deciders` and `rescore`: the roles that decide a unit's result, and how `moot score` re-runs
  them with another model on a saved unit without re-running anyone else:
  `async rescore(scenario, Rescore, ctx) -> Rescored`. `ctx` is a UnitContext whose models are
  the recorded ones except the rescored roles, whose log appends to a copy of the unit's
  transcript, and whose `prior` is that transcript (a call it already holds is served from it).

The engine (run folders, the model-call engine, the event log, the command line, replay, export,
reports) works on any registered protocol; nothing else in moot names a protocol.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Literal, Mapping, Optional, Sequence, get_args

from pydantic import BaseModel

from moot.contract.commands import DatasetCommand
from moot.contract.metrics import LABELLED, Metrics
from moot.contract.report import Reporting
from moot.contract.units import ITEMS, InputField, Units
from moot.contract.vary import GENERIC, VaryKey

__all__ = ["InputField", "Outcome", "Protocol", "ProtocolError", "Registry", "Rescore", "Rescored", "check"]


@dataclass(frozen=True)
class Outcome:
    """What running one unit gave: an item's label, or how a conference ended."""

    prediction: Optional[str] = None  # None: the protocol predicts nothing (a conference)
    explanation: str = ""
    raw: Optional[str] = None  # the reply the prediction was read from
    decided_by: str = ""
    status: Literal["completed", "failed", "interrupted"] = "completed"
    stop_reason: str = ""
    summary: dict[str, Any] = field(default_factory=dict)  # extra fields for results.jsonl


RunUnit = Callable[[Any, Any], Awaitable[Outcome]]  # (scenario, UnitContext) -> Outcome


@dataclass(frozen=True)
class Rescore:
    """What `moot score` asks of a protocol for one saved unit."""

    transcript: Any  # the unit's Transcript as saved (moot.log.transcript)
    roles: Mapping[str, str]  # deciding role -> the model spec it is re-run with
    every: bool = False  # also re-decide units the protocol decided without these roles


@dataclass(frozen=True)
class Rescored:
    """What rescoring one unit gave: a new outcome (items), and lines to print about it."""

    outcome: Optional[Outcome] = None  # None: the unit's recorded result stands
    lines: tuple[str, ...] = ()


RescoreUnit = Callable[[Any, Rescore, Any], Awaitable[Rescored]]  # (scenario, Rescore, UnitContext)


@dataclass(frozen=True)
class Protocol:
    """One deliberation protocol; see the module docstring."""

    name: str
    title: str
    paper: str
    scenario: type[BaseModel]
    policy: Callable[..., Any]
    run: RunUnit
    inputs: tuple[InputField, ...] = ()
    result_name: str = "prediction"
    deciders: tuple[str, ...] = ()  # roles `moot score` re-runs
    rescore: Optional[RescoreUnit] = None
    example: Optional[str] = None  # bundled scenario name (`moot new`, docs); None: not from YAML
    durable: bool = False  # fsync every append: the log is the run's only copy (conferences)
    units: Units = ITEMS  # items of a dataset, or runs of the scenario (moot.contract.units)
    vary: tuple[VaryKey, ...] = GENERIC  # what `--vary` and experiments may change (moot.contract.vary)
    metrics: Metrics = LABELLED  # per-unit measures, the headline, metric sets (moot.contract.metrics)
    report: Reporting = Reporting()  # its tables, sections and plots in `moot report` (moot.contract.report)
    commands: tuple[DatasetCommand, ...] = ()  # its own command-line entries (moot.contract.commands)

    @property
    def per_item(self) -> bool:
        """Whether units are items of a dataset (else each unit is a whole run of the scenario)."""
        return self.units.items

    @property
    def from_yaml(self) -> bool:
        return self.example is not None

    def input_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.inputs)


class ProtocolError(ValueError):
    """A protocol that does not keep the contract (a programming error, found at import)."""


class Registry:
    """Protocols by name, each checked as it registers."""

    def __init__(self, protocols: Sequence[Protocol] = ()):
        self._protocols: dict[str, Protocol] = {}
        for protocol in protocols:
            self.register(protocol)

    def register(self, protocol: Protocol) -> Protocol:
        check(protocol)
        if protocol.name in self._protocols:
            raise ProtocolError(f"protocol {protocol.name!r} is registered twice")
        taken = {command.name for p in self._protocols.values() for command in p.commands}
        if any(command.name in taken for command in protocol.commands):
            raise ProtocolError(f"{protocol.name}: a command of its is another protocol's")
        self._protocols[protocol.name] = protocol
        return protocol

    def get(self, name: str) -> Protocol:
        return self._protocols[name]

    def __contains__(self, name: object) -> bool:
        return name in self._protocols

    def names(self, from_yaml: bool = True) -> list[str]:
        return [n for n, p in self._protocols.items() if p.from_yaml or not from_yaml]

    def all(self, from_yaml: bool = True) -> list[Protocol]:
        return [self._protocols[n] for n in self.names(from_yaml)]

    def commands(self) -> dict[str, DatasetCommand]:
        """The protocols' own command-line entries by name."""
        return {c.name: c for p in self._protocols.values() for c in p.commands}


def check(protocol: Protocol) -> None:
    """The contract: a scenario schema naming the protocol, the scenario methods the engine calls,
    a policy function, an async `run`, distinct inputs, and prompts for every templated role."""
    name = protocol.name
    declared = protocol.scenario.model_fields.get("protocol")
    if declared is None or name not in get_args(declared.annotation):
        raise ProtocolError(f"{name}: its scenario schema must have `protocol: Literal[{name!r}]`")
    for method in ("roles", "model_keys", "model_for", "generation_for", "templates"):
        if not callable(getattr(protocol.scenario, method, None)):
            raise ProtocolError(f"{name}: its scenario schema has no {method}()")
    if not inspect.iscoroutinefunction(protocol.run):
        raise ProtocolError(f"{name}: run must be an async function (scenario, ctx) -> Outcome")
    if not callable(protocol.policy):
        raise ProtocolError(f"{name}: policy must be a speaker-selection function")
    names = protocol.input_names()
    if len(set(names)) != len(names):
        raise ProtocolError(f"{name}: input fields must be distinct")
    if protocol.units.items != bool(protocol.inputs):
        raise ProtocolError(f"{name}: units that are items need input fields; runs of the scenario take none")
    vary = [key.name for key in protocol.vary]
    if len(set(vary)) != len(vary):
        raise ProtocolError(f"{name}: vary keys must be distinct")
    if protocol.metrics.headline not in {m.name for m in protocol.metrics.measures}:
        raise ProtocolError(f"{name}: the headline {protocol.metrics.headline!r} is not one of its measures")
    if protocol.deciders and protocol.rescore is None:
        raise ProtocolError(f"{name}: deciders {protocol.deciders} need a rescore function")
    if protocol.rescore is not None and not inspect.iscoroutinefunction(protocol.rescore):
        raise ProtocolError(f"{name}: rescore must be an async function (scenario, Rescore, ctx) -> Rescored")
