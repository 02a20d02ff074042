"""The protocol contract: what every deliberation protocol declares, checked when it registers.

A protocol (a decision conference, COLA, S2MAD, negotiation, multi-agent debate, ...) is one
`Protocol[S]` object, generic over its scenario type S, registered by name (moot.contract.registry;
moot's own in moot.protocols.registry). Everything protocol-specific arrives through its fields,
each typed and checked at registration (moot.contract.check), so the engine, the log, the views
and the command line name no protocol:

- `scenario`: its schema (a pydantic model whose `protocol` field is the protocol's name), which
  also says which roles take a model and with which settings, and answers the engine's questions
  through ScenarioBase's typed hooks (its label set, declared and headline metric, unparsed limit;
  its models, generation, retry and backends blocks, checked at registration); `example`: its
  bundled scenario;
- `policy`: its speaker-selection policy (a pure function in moot.speaker_selection, tested by
  tables), typed as itself: Protocol's second type parameter P is the policy's own signature
  (a protocol's plan and turns: names spoken, turns with decisions, a conference's steps). The
  engine never calls it, as no two policies take the same arguments: the protocol's own `run`
  does (judge-eval's one turn needs none); the contract names where its turn order lives;
- `inputs`: what one item is (nothing for a protocol whose scenario is the input) and which
  dataset column fills each field;
- `run`: how one unit runs to an Outcome, asking models through the UnitContext it is given
  (moot.kit.UnitContext), which records every call;
- `deciders` and `rescore`: the roles that decide a unit's result, and how `moot score` re-runs
  them with another model on a saved unit without re-running anyone else (`ctx` is a UnitContext
  whose models are the recorded ones but the rescored roles', whose log appends to a copy of the
  unit's transcript, and whose `prior` is that transcript);
- `events`: its own event types, registered in the log with their versions and migrations;
- `view`: how its units read on a terminal and in documents (moot.views.unit);
- `units`: whether a unit is an item of a dataset or a run of the scenario, what units are
  called when counted, and what pairs them across runs (moot.contract.units);
- `vary`: the scenario keys `--vary` and experiments may change, and how (moot.contract.vary);
- `metrics`: its per-unit measures, the headline one, and the metric sets its labelled runs
  report side by side (moot.contract.metrics);
- `report`: its runs' row names, table cells, and own sections, CSV files and plots in
  `moot report` (moot.contract.report);
- `commands`: command-line entries of its own (moot.contract.commands);
- `calls`: the model calls one unit makes under a scenario (`moot run EXPERIMENT --plan`); None:
  it depends on the conversation (a conference);
- `rounds`: a finished unit's answers per round, read from its results row (deliberation
  dynamics, the majority of first-round answers as a baseline); None: no rounds of answers;
- `seats`: the seats a person may take in a run of a scenario (`moot run --human SEAT`): each
  seat's name (an agent, a role, a group) and the agents it covers; the protocol's run builds a
  seated agent's turns on moot.kit.Seat (`ctx.seat(agent)`). None: no seat for a person;
- `rating`: what people may rate blind in a finished unit (`moot annotate`) and the model's own
  answers (moot.contract.rating); None: a labelled item's label, or nothing;
- `scripted`: what a scripted answer to each of its questions looks like, by the calls' stage
  (moot.models.expect: a free turn's template its parser accepts, with the options its fields
  take; closed answers need none), so `--model scripted` plays it
  end to end. Every protocol moot ships declares one (a test keeps it so); None: the scripted
  model's generic replies.

A field added to Protocol is checked like the others: give it a precise type (and a default when
a protocol may leave it out).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Generic, Literal, Mapping, Optional

from typing_extensions import TypeVar  # with a default (typing's own has one from Python 3.13)

from moot.kit import ResultRow, UnitContext
from moot.log.events import Json
from moot.log.registry import EventType
from moot.log.transcript import Transcript
from moot.models.expect import Expected
from moot.scenario.blocks import ScenarioBase
from moot.views.unit import UnitView
from moot.contract.commands import DatasetCommand
from moot.contract.metrics import LABELLED, Metrics
from moot.contract.rating import Rateable, item_labels
from moot.contract.report import Reporting
from moot.contract.units import ITEMS, InputField, Units
from moot.contract.vary import GENERIC, VaryKey

S = TypeVar("S", bound=ScenarioBase)
P = TypeVar("P", bound=Callable[..., object], default=Callable[..., object], covariant=True)  # its policy
Rounds = list[list[Optional[str]]]  # per round, each agent's answer (a label; None: unparsed)

__all__ = ["InputField", "Outcome", "Protocol", "ProtocolError", "Rescore", "Rescored"]


@dataclass(frozen=True)
class Outcome:
    """What running one unit gave: an item's label, or how a run of the scenario ended."""

    prediction: Optional[str] = None  # None: the protocol predicts nothing (a conference)
    explanation: str = ""
    raw: Optional[str] = None  # the reply the prediction was read from
    decided_by: str = ""
    status: Literal["completed", "failed", "interrupted"] = "completed"
    stop_reason: str = ""
    summary: dict[str, Any] = field(default_factory=dict)  # extra fields for results.jsonl


@dataclass(frozen=True)
class Rescore:
    """What `moot score` asks of a protocol for one saved unit."""

    transcript: Transcript  # the unit's transcript as saved
    roles: Mapping[str, str]  # deciding role -> the model spec it is re-run with
    every: bool = False  # also re-decide units the protocol decided without these roles


@dataclass(frozen=True)
class Rescored:
    """What rescoring one unit gave: a new outcome (items), and lines to print about it."""

    outcome: Optional[Outcome] = None  # None: the unit's recorded result stands
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class Protocol(Generic[S, P]):
    """One deliberation protocol; see the module docstring."""

    name: str
    title: str
    paper: str
    scenario: type[S]
    policy: P
    run: Callable[[S, UnitContext], Awaitable[Outcome]]
    inputs: tuple[InputField, ...] = ()
    result_name: str = "prediction"
    deciders: tuple[str, ...] = ()  # roles `moot score` re-runs
    rescore: Optional[Callable[[S, Rescore, UnitContext], Awaitable[Rescored]]] = None
    example: Optional[str] = None  # bundled scenario name (`moot new`, docs); None: not from YAML
    durable: bool = False  # fsync every append: the log is the run's only copy (conferences)
    events: tuple[EventType, ...] = ()
    view: type[UnitView] = UnitView
    units: Units = ITEMS  # items of a dataset, or runs of the scenario (moot.contract.units)
    vary: tuple[VaryKey, ...] = GENERIC  # what `--vary` and experiments may change (moot.contract.vary)
    metrics: Metrics = LABELLED  # per-unit measures, the headline, metric sets (moot.contract.metrics)
    report: Reporting = Reporting()  # its tables, sections and plots in `moot report` (moot.contract.report)
    commands: tuple[DatasetCommand, ...] = ()  # its own command-line entries (moot.contract.commands)
    calls: Optional[Callable[[S], float]] = None  # model calls per unit (--plan); None: not known ahead
    rounds: Optional[Callable[[ResultRow], Optional[Rounds]]] = None  # answers per round of a unit (its results row)
    seats: Optional[Callable[[S], Mapping[str, tuple[str, ...]]]] = None  # seat -> its agents (--human)
    rating: Optional[Callable[[Transcript], tuple[Rateable, ...]]] = None  # what people rate (moot annotate)
    scripted: Optional[Callable[[S], Mapping[str, Expected]]] = None  # stage -> a scripted answer's form

    @property
    def from_yaml(self) -> bool:
        return self.example is not None

    def input_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.inputs)

    def rateables(self, transcript: Transcript) -> tuple[Rateable, ...]:
        """What people may rate in a finished unit (`moot annotate`; moot.contract.rating)."""
        if self.rating is not None:
            return self.rating(transcript)
        return item_labels(transcript) if self.units.items else ()

    def expected(self, scenario: S) -> Mapping[str, Expected]:
        """The scripted answer form of each stage of a unit run with `scenario` (none declared: {})."""
        return self.scripted(scenario) if self.scripted is not None else {}

    def view_of(self, scenario: Mapping[str, Json]) -> UnitView:
        """The view of a unit run with `scenario` (as recorded: plain JSON)."""
        return self.view(scenario, self.result_name)


class ProtocolError(ValueError):
    """A protocol that does not keep the contract (a programming error, found at import)."""
