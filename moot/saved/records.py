"""The shapes of run.json, a results row and experiment.json, checked once where they are read.

Every reader (the report, compare, export, the viewer, the bundle, the Python API) reads these
files through moot.saved.files, which checks each against its shape here: a key moot writes
that holds a value of another type (a hand edit: `"models": 5`, `"gold": {}`, `"labels": "abc"`)
is a RunFolderError naming the file (and line) and the key, instead of a TypeError deep inside
whichever reader met it first. Keys moot does not know are kept as they are (later versions may
add some, a protocol adds its own). A checked run.json and results row are read as these typed
records (moot.saved.source), whose properties also read the keys of folders of earlier versions.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from moot.metrics.classification import METRICS

Scalar = Union[str, int, float, bool, None]
# what a pydantic error type says in the user's words
WORDS = {"string_type": "must be text", "int_type": "must be a whole number", "dict_type": "must be a mapping",
         "list_type": "must be a list", "bool_type": "must be true or false", "float_type": "must be a number",
         "model_type": "must be a mapping", "greater_than_equal": "must be 0 or more"}
SCALAR = "must be text, a number, true, false or null"  # the words for a Scalar (a union's error)


class Shape(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")

    def extra(self, key: str) -> Any:
        """A key of a protocol's own (judge-eval's `task`, a conference row's `topics`), or None."""
        return (self.model_extra or {}).get(key)


class Rescored(Shape):
    from_: Optional[str] = Field(None, alias="from")
    roles: Optional[dict[str, str]] = None


class RunMeta(Shape):
    """run.json (moot.engine.meta; `planned_items`, `metric`: folders of earlier versions)."""

    folder_version: Optional[int] = None
    protocol: Optional[str] = None
    scenario_path: Optional[str] = None
    scenario: Optional[dict[str, Any]] = None
    labels: Optional[list[str]] = None
    headline_metric: Optional[str] = None
    metric: Optional[str] = None
    planned_units: Optional[int] = Field(default=None, ge=0)
    planned_items: Optional[int] = Field(default=None, ge=0)
    limit: Optional[int] = None
    skipped_rows: Optional[dict[str, int]] = None
    created: Optional[str] = None
    last_invoked: Optional[str] = None
    moot_version: Optional[str] = None
    models: Optional[dict[str, str]] = None
    dataset_path: Optional[str] = None
    data_file: Optional[str] = None
    rescored: Optional[Rescored] = None
    model_changes: Optional[list[dict[str, Any]]] = None
    dataset_sha256: Optional[str] = None
    scenario_sha256: Optional[str] = None
    spend_usd: Optional[float] = Field(default=None, ge=0)

    @field_validator("headline_metric", "metric")
    @classmethod
    def known_metric(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and value not in METRICS:
            raise ValueError(f"must be one of {', '.join(METRICS)}")
        return value

    @property
    def scenario_fields(self) -> dict[str, Any]:
        return self.scenario or {}

    @property
    def protocol_name(self) -> Optional[str]:
        """Its protocol: run.json's, else its scenario's (folders of earlier versions)."""
        found = self.protocol or self.scenario_fields.get("protocol")
        return str(found) if found else None

    @property
    def headline(self) -> Optional[str]:
        """The headline metric it declares (folders of earlier versions: the scenario's `metric`)."""
        return self.headline_metric or self.metric

    @property
    def planned(self) -> Optional[int]:
        """Its planned units (folders of earlier versions: `planned_items`)."""
        return self.planned_units if self.planned_units is not None else self.planned_items

    @property
    def spent(self) -> float:
        """What its calls cost in all, every invocation's (folders of earlier versions: 0)."""
        return self.spend_usd or 0.0

    @property
    def seed(self) -> Optional[int]:
        """Its scenario's generation seed (None: it states none, or none that is a whole number)."""
        generation = self.scenario_fields.get("generation")
        return whole(generation.get("seed")) if isinstance(generation, dict) else None

    @property
    def scenario_name(self) -> str:
        """Its scenario file's stem ('' when run.json names none)."""
        return Path(self.scenario_path).stem if self.scenario_path else ""

    @property
    def dataset_name(self) -> str:
        """Its dataset file's stem ('' when run.json names none)."""
        return Path(self.dataset_path).stem if self.dataset_path else ""


class ResultRow(Shape):
    """A results.jsonl row (moot.engine.runner.UnitResult.row; protocols add keys of their own)."""

    id: str
    status: Optional[str] = None
    prediction: Optional[str] = None
    gold: Optional[str] = None
    explanation: Optional[str] = None
    transcript: Optional[str] = None
    variant: Optional[dict[str, Scalar]] = None

    @property
    def state(self) -> str:
        """How the unit ended: its `status`, `completed` when the row states none."""
        return self.status or "completed"

    @property
    def labelled(self) -> bool:
        """Whether it has a gold label to be scored against."""
        return self.gold is not None

    @property
    def variant_text(self) -> dict[str, str]:
        """What this unit of a batch changes (`{"seed": "2"}`), as text; empty for other units."""
        return {str(k): str(v) for k, v in (self.variant or {}).items()}


class ManifestCell(Shape):
    arm: str
    dataset: str
    model: str
    seed: int
    folder: str
    status: Optional[str] = None
    scored: Optional[str] = None
    scored_folder: Optional[str] = None

    @field_validator("folder", "scored_folder")
    @classmethod
    def inside(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and (PurePosixPath(value).is_absolute() or ".." in PurePosixPath(value).parts):
            raise ValueError("must be a folder inside the experiment's folder")
        return value


class Manifest(Shape):
    """experiment.json (moot.experiment.grid.write_manifest)."""

    experiment: str
    title: Optional[str] = None
    cells: list[ManifestCell] = []
    order: Optional[list[str]] = None
    derived: Optional[dict[str, str]] = None
    labels: Optional[dict[str, str]] = None
    compare: Optional[dict[str, Any]] = None


def whole(value: object) -> Optional[int]:
    """A seed as a whole number (`2`, `"2"`); None when it is none or not one."""
    try:
        return int(str(value)) if value is not None else None
    except ValueError:
        return None


def problem(data: dict[str, Any], shape: type[Shape]) -> Optional[str]:
    """What is wrong with `data` as a `shape` (`key 'models' must be a mapping (found int)`), or None."""
    try:
        shape.model_validate(data)
    except ValidationError as exc:
        return described(exc.errors(include_url=False)[0], data)
    return None


def described(err: ErrorDetails, data: Any) -> str:
    """One pydantic error as `key 'a.b[0]' must be text (found int '5')`, the value cut short."""
    found, words = data, WORDS.get(err["type"]) or str(err["msg"]).removeprefix("Value error, ")
    path: list[str] = []
    for part in err["loc"]:
        if isinstance(found, dict) and part in found:
            found = found[part]
        elif isinstance(found, list) and isinstance(part, int) and part < len(found):
            found = found[part]
        else:  # a union's member name, not a key
            words = SCALAR
            break
        path.append(f"[{part}]" if isinstance(part, int) else f"{'.' if path else ''}{part}")
    key = "".join(path)
    if err["type"] == "missing":
        return f"key {str(err['loc'][-1])!r} is missing"
    return f"key {key!r} {words} (found {type(found).__name__} {str(found)[:60]!r})"
