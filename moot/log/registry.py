"""The log's event types: the core's, and those protocols register, each with its own version.

A transcript validates against the discriminated union of all of them (by `type`). A protocol's
event type carries a version and the steps that bring each older version up to it, like the
core's schema: `run_started` records the versions a run wrote (`event_versions`; absent: 1), and
loading upgrades each older event before it is validated, so a protocol can change its events
without leaving its old transcripts behind. Type names are unique across core and protocols.

An event type no imported protocol registered is looked for among the installed protocols: the
registry calls its `finder`, a hook the protocol registry installs (moot.contract.registry calls
`EVENTS.find_with`), so the log imports nothing above it (tests/test_import_direction.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Callable, Iterable, Iterator, Mapping, Optional, Union, get_args

from pydantic import Field, TypeAdapter

from moot.log.events import CORE_TYPES, EventBase, Json, JsonObject, TranscriptError

Migration = Callable[[JsonObject], JsonObject]  # one event of version n as version n + 1
Row = tuple[int, Json]  # (file line, decoded event)
Finder = Callable[[], None]  # registers more event types (every installed protocol's)


@dataclass(frozen=True)
class EventType:
    """A protocol's event payload type: a model whose `type` literal names it, its version, and
    `migrations[n]` turning an event of version n into version n + 1 (one for each n < version)."""

    model: type[EventBase]
    version: int = 1
    migrations: Mapping[int, Migration] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return type_name(self.model)


def type_name(model: type[EventBase]) -> str:
    """The `type` literal of an event model; ValueError when it has none."""
    declared = model.model_fields.get("type")
    names = get_args(declared.annotation) if declared is not None else ()
    if len(names) != 1 or not isinstance(names[0], str) or declared is None or declared.default != names[0]:
        raise ValueError(f"{model.__name__} needs a field `type: Literal[NAME] = NAME`")
    return names[0]


class EventRegistry:
    """Event types by name: the core's, then every registered protocol's; `finder` (None: none)
    registers more when a name is unknown."""

    def __init__(self, core: Iterable[type[EventBase]], finder: Optional[Finder] = None):
        self._finder = finder
        self._models = {type_name(model): model for model in core}
        self._types: dict[str, EventType] = {}
        self._adapter: Optional[TypeAdapter[EventBase]] = None

    def find_with(self, finder: Finder) -> None:
        """Call `finder` when a name is unknown: the hook by which a protocol registry above the log
        offers the event types of protocols not imported yet."""
        self._finder = finder

    def register(self, *types: EventType) -> None:
        """Add a protocol's event types; the same type again is harmless, a clash is a ValueError."""
        for event_type in types:
            name = event_type.name
            known = self._types.get(name)
            if known == event_type:
                continue
            if known is not None or name in self._models:
                raise ValueError(f"event type {name!r} is registered already")
            if event_type.version < 1 or set(event_type.migrations) != set(range(1, event_type.version)):
                raise ValueError(f"event type {name!r} version {event_type.version} needs a migration from "
                                 f"each older version (1..{event_type.version - 1})")
            self._types[name] = event_type
            self._models[name] = event_type.model
            self._adapter = None

    def knows(self, name: object) -> bool:
        """Whether `name` is an event type; a name no imported protocol registered looks among the
        installed ones first (the registry's finder)."""
        if name not in self._models and isinstance(name, str) and self._finder:
            self._finder()
        return name in self._models

    def validate(self, data: object) -> EventBase:
        """One decoded event as its type (pydantic's ValidationError when it does not fit)."""
        if isinstance(data, dict):
            self.knows(data.get("type"))
        if self._adapter is None:
            union = Union[tuple(self._models.values())]  # type: ignore[valid-type]  # built at run time
            self._adapter = TypeAdapter(Annotated[union, Field(discriminator="type")])  # type: ignore[arg-type]
        return self._adapter.validate_python(data)

    def upgrade(self, path: Path, rows: Iterable[Row], written: Mapping[str, int]) -> Iterator[Row]:
        """Rows whose protocol event types are older than registered, migrated as they come;
        `written`: the versions the transcript's run recorded (a type it does not name was written
        as version 1)."""
        for line, data in rows:
            name = data.get("type") if isinstance(data, dict) else None
            event_type = self._types.get(name) if isinstance(name, str) and self.knows(name) else None
            if event_type is not None and isinstance(data, dict):
                data = self._migrated(path, line, data, event_type, written.get(event_type.name, 1))
            yield line, data

    @staticmethod
    def _migrated(path: Path, line: int, data: JsonObject, event_type: EventType, version: int) -> JsonObject:
        if version > event_type.version:
            raise TranscriptError(f"{path}:{line}: event type {event_type.name!r} version {version} is newer "
                                  f"than this moot reads ({event_type.version}); upgrade moot")
        for step in range(version, event_type.version):
            data = event_type.migrations[step](data)
        return data


EVENTS = EventRegistry(CORE_TYPES)  # moot.contract.registry installs its finder
