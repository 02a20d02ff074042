"""DATA.yaml: the dataset spec's schema, loading, and its one-line errors.

Apart from the readers in moot.data.load so the spec (what users write) can be read and checked
without the row-reading machinery; the key reference is moot.data.load' docstring.
"""

from __future__ import annotations

import codecs
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Optional, Sequence

from pydantic import (
    BaseModel, ConfigDict, PrivateAttr, ValidationError, create_model, field_validator, model_validator,
)

from moot.scenario.errors import choice_hint, first_cause, key_and_message, without_echoes
from moot.safety.yamlsource import SourceError, format_key, read_yaml
from moot.errors import MootError


class DatasetError(MootError, ValueError):
    """A bad dataset spec or data file; the message is one line naming file, line and key."""


class _Problem(ValueError):  # raised in validators to report a problem at a precise key path
    def __init__(self, loc: tuple[Any, ...], msg: str):
        super().__init__(msg)
        self.loc, self.msg = loc, msg


class Columns(BaseModel):
    """`columns:` — which dataset column fills each input (and the label and id). A spec read for a
    protocol with inputs of its own (e.g. `question`) also takes those keys (`spec_model`)."""

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    text: str
    target: str | None = None
    label: str | None = None
    id: str | None = None
    comments: str | None = None
    comment_text: str = "text"
    comment_time: str = "time"
    role: str | None = None  # the role an item asks for (COLA: its domain specialist)

    def named(self) -> list[tuple[str, str]]:
        """(key, column name) of every column the spec names (comment keys aside), in key order."""
        return [(key, value) for key, value in self.model_dump().items()
                if key not in COMMENT_KEYS and isinstance(value, str)]

    def inputs(self) -> list[tuple[str, str]]:
        """(key, column name) of the protocol's own input columns (beyond the built-in keys)."""
        return [(key, name) for key, name in self.named() if key not in BUILT_IN]


class _OwnInputs(Columns):
    """Columns of a spec read for protocols with inputs of their own: `text` is one input among
    others, so it may be left out, but at least one input column must be named."""

    text: str | None = None  # type: ignore[assignment]

    @model_validator(mode="after")
    def _some_input(self) -> "_OwnInputs":
        inputs = [key for key in type(self).model_fields if key not in NOT_INPUTS]
        if not any(getattr(self, key) for key in inputs):
            raise _Problem(("columns",), f"names no input column (one of {', '.join(inputs)})")
        return self


COMMENT_KEYS = ("comment_text", "comment_time")
BUILT_IN = tuple(Columns.model_fields)
NOT_INPUTS = ("label", "id", *COMMENT_KEYS)


class DatasetSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    path: str
    format: Literal["csv", "tsv", "jsonl", "lines"] = "csv"
    encoding: str = "utf-8"
    quoting: Literal["minimal", "none"] = "minimal"
    separator: str | None = None
    columns: Columns
    labels: dict[str, str] | None = None
    filter: dict[str, list[str]] = {}
    target_roles: dict[str, str] = {}  # target (case-insensitive) -> role, for rows without columns.role
    metric: Literal["f_avg", "macro_f1", "accuracy", "rf1", "nf1"] | None = None  # the headline metric
    source: str | None = None  # where the data is published, for a file moot does not ship: named when it is missing
    benchmark: str | None = None  # the published dataset it is (moot/report/published.yaml's `dataset`; default: its stem)

    _base_dir: Path | None = PrivateAttr(default=None)
    _source: str | None = PrivateAttr(default=None)

    @field_validator("filter", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, dict):
            return {k: v if isinstance(v, list) else [v] for k, v in value.items()}
        return value

    @field_validator("labels", mode="before")
    @classmethod
    def _no_booleans(cls, value: Any) -> Any:
        for k, v in value.items() if isinstance(value, dict) else ():
            if isinstance(k, bool) or isinstance(v, bool):
                key = str(k).lower() if isinstance(k, bool) else k
                raise _Problem(("labels", key), "YAML read an unquoted true/false/yes/no as a boolean; quote it")
        return value

    @model_validator(mode="after")
    def _check(self) -> DatasetSpec:
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise _Problem(("encoding",), f"unknown encoding {self.encoding!r}") from None
        if self.columns.comments and self.format != "jsonl":
            raise _Problem(("columns", "comments"), "only supported for format jsonl")
        if self.labels is not None and not self.columns.label:
            raise _Problem(("labels",), "needs columns.label")
        if self.separator is not None:
            if self.format == "jsonl":
                raise _Problem(("separator",), "not used by format jsonl")
            if self.format == "lines" and not self.separator:
                raise _Problem(("separator",), "must not be empty")
            if self.format in ("csv", "tsv") and len(self.separator) != 1:
                raise _Problem(("separator",), "must be one character for csv/tsv")
        if self.format == "lines":
            used = [(("columns", k), name) for k, name in self.columns.named()]
            used += [(("filter", k), k) for k in self.filter]
            for loc, name in used:
                if name is not None and name not in ("0", "1"):
                    raise _Problem(loc, f'format lines has only fields "0" and "1", not {name!r}')
        return self

    @property
    def data_path(self) -> Path:
        """The data file as an absolute path (relative `path` is taken from the spec's folder)."""
        p = Path(self.path).expanduser()
        if not p.is_absolute():
            p = (self._base_dir or Path.cwd()) / p
        return p.resolve()


@lru_cache(maxsize=32)
def spec_model(inputs: tuple[str, ...] = ()) -> type[DatasetSpec]:
    """The spec's schema for protocols whose input columns are `inputs` (dataset column keys):
    the built-in keys, and each other input as an optional column key."""
    own = tuple(dict.fromkeys(k for k in inputs if k not in BUILT_IN))
    if not own:
        return DatasetSpec
    columns = create_model("Columns", __base__=_OwnInputs,
                           **{key: (Optional[str], None) for key in own})  # type: ignore[call-overload]
    return create_model("DatasetSpec", __base__=DatasetSpec, columns=(columns, ...))


def load_dataset_spec(path: str | Path, inputs: Sequence[str] = ()) -> DatasetSpec:
    """Read and check a DATA.yaml (safe loader only); the data file must exist. `inputs`: the
    dataset column keys of the protocols it is read for (their own keys are allowed in `columns:`)."""
    name = str(path)
    model = spec_model(tuple(inputs))
    try:
        source = read_yaml(path)
    except SourceError as exc:
        raise DatasetError(str(exc)) from None
    if not isinstance(source.data, dict):
        raise DatasetError(f"{name}: top level must be a mapping (path, format, columns, ...)")
    try:
        spec = model.model_validate(source.data)
    except ValidationError as exc:
        errors = without_echoes(exc.errors(), model)
        err = first_cause(errors)  # an unknown key (typo) before the "missing" key it causes
        loc, problem = tuple(err["loc"]), (err.get("ctx") or {}).get("error")
        if isinstance(problem, _Problem):
            loc, msg = problem.loc, problem.msg
        elif err["type"] == "extra_forbidden":
            loc, msg = key_and_message(err, model)
        elif err["type"] == "missing":
            msg = "missing required key"
        else:
            msg = f"{err['msg']} (got {repr(err['input'])[:60]}){choice_hint(err)}"
            if isinstance(err["input"], bool):
                msg += "; YAML reads unquoted true/false/yes/no as booleans, quote the value"
        loc = tuple(p for p in loc if p != "[key]")
        line = source.line_of(loc)
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        where = f"{name}:{line}" if line else name
        raise DatasetError(f"{where}: {format_key(loc) or '(top level)'}: {msg}{more}".replace("\n", " ")) from None
    spec._base_dir, spec._source = Path(path).resolve().parent, name
    data_file(spec)
    return spec


def data_file(spec: DatasetSpec) -> Path:
    """The spec's data file, which must exist."""
    path = spec.data_path
    if not path.is_file():
        published = f" (published at {' '.join(spec.source.split())})" if spec.source else ""
        raise DatasetError(f"{spec._source or 'dataset spec'}: path: file not found: {path}{published}")
    return path
