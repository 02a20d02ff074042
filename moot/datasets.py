"""Dataset specs (DATA.yaml) and lazy reading of CSV / TSV / JSONL / line-per-item benchmarks.

    path: ../shared/datasets/vast_dev_sample.csv   # relative to the YAML file's folder, or absolute
    format: csv            # csv | tsv | jsonl | lines
    encoding: utf-8        # e.g. latin-1 for SemEval-2016
    quoting: minimal       # csv/tsv: minimal | none (csv.QUOTE_NONE: quotes are plain text)
    separator: " "         # lines: split once on it (default " "); csv/tsv: delimiter override
    columns: {text: Tweet, target: Target, label: Stance}   # also id, comments, comment_text/_time
    labels: {"0": against, "1": favor, "2": neutral}        # value -> protocol label; others skipped
    filter: {"seen?": ["0"]}                                # column -> allowed values, before limit

Column names are literal header names, dots included (`claims.claimCorrectedText`); in jsonl a
dotted name that is not a key is followed as a nested path. No `id`: the 0-based data-row index.
`comments` (jsonl) names a list of objects; `comment_text` / `comment_time` name keys inside them
(default `text` / `time`). Label keys are compared as strings after strip; without `labels` the
stripped raw value passes through. Format `lines` (SST-2, `<label> <sentence>`): fields "0" (before
the first separator) and "1" (the rest), so `columns: {label: "0", text: "1"}`.
Errors are `DatasetError`s with a one-line message `file[:line]: key.path: problem`.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Literal, TextIO

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, field_validator, model_validator

from moot.yamlsource import SourceError, format_key, read_yaml

__all__ = ["Columns", "Comment", "DatasetError", "DatasetSpec", "Item", "dataset_fingerprint",
           "iter_items", "load_dataset_spec"]


class DatasetError(ValueError):
    """A bad dataset spec or data file; the message is one line naming file, line and key."""


class _Problem(ValueError):  # raised in validators to report a problem at a precise key path
    def __init__(self, loc: tuple[Any, ...], msg: str):
        super().__init__(msg)
        self.loc, self.msg = loc, msg


class Columns(BaseModel):
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    text: str
    target: str | None = None
    label: str | None = None
    id: str | None = None
    comments: str | None = None
    comment_text: str = "text"
    comment_time: str = "time"


_ROW_COLUMNS = ("text", "target", "label", "id", "comments")


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
            used = [(("columns", k), getattr(self.columns, k)) for k in _ROW_COLUMNS]
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


@dataclass(frozen=True)
class Comment:
    text: str
    time: float | None = None


@dataclass(frozen=True)
class Item:
    id: str
    text: str
    target: str | None = None
    label: str | None = None
    comments: tuple[Comment, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


_ALLOWED = {(): list(DatasetSpec.model_fields), ("columns",): list(Columns.model_fields)}


def load_dataset_spec(path: str | Path) -> DatasetSpec:
    """Read and check a DATA.yaml (safe loader only); the data file must exist."""
    name = str(path)
    try:
        source = read_yaml(path)
    except SourceError as exc:
        raise DatasetError(str(exc)) from None
    if not isinstance(source.data, dict):
        raise DatasetError(f"{name}: top level must be a mapping (path, format, columns, ...)")
    try:
        spec = DatasetSpec.model_validate(source.data)
    except ValidationError as exc:
        errors = exc.errors()
        err = errors[0]
        loc, problem = tuple(err["loc"]), (err.get("ctx") or {}).get("error")
        if isinstance(problem, _Problem):
            loc, msg = problem.loc, problem.msg
        elif err["type"] == "extra_forbidden":
            msg = f"unknown key (allowed: {', '.join(_ALLOWED.get(loc[:-1], []))})"
        elif err["type"] == "missing":
            msg = "missing required key"
        else:
            msg = f"{err['msg']} (got {repr(err['input'])[:60]})"
            if isinstance(err["input"], bool):
                msg += "; YAML reads unquoted true/false/yes/no as booleans, quote the value"
        loc = tuple(p for p in loc if p != "[key]")
        line = source.line_of(loc)
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        where = f"{name}:{line}" if line else name
        raise DatasetError(f"{where}: {format_key(loc) or '(top level)'}: {msg}{more}".replace("\n", " ")) from None
    spec._base_dir, spec._source = Path(path).resolve().parent, name
    _data_file(spec)
    return spec


def _data_file(spec: DatasetSpec) -> Path:
    path = spec.data_path
    if not path.is_file():
        raise DatasetError(f"{spec._source or 'dataset spec'}: path: file not found: {path}")
    return path


def dataset_fingerprint(spec: DatasetSpec) -> str:
    """Hex sha256 of the data file's bytes."""
    with open(_data_file(spec), "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def iter_items(spec: DatasetSpec, limit: int | None = None) -> Iterator[Item]:
    """Items read lazily: filter, then label mapping/skipping, then `limit` (None: all).

    A negative limit or a missing data file raise at once, bad rows when they are reached."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    return _items(spec, _data_file(spec), limit)


def _items(spec: DatasetSpec, path: Path, limit: int | None) -> Iterator[Item]:
    cols = spec.columns
    labels = None if spec.labels is None else {k.strip(): v.strip() for k, v in spec.labels.items()}
    allowed = {c: {v.strip() for v in vals} for c, vals in spec.filter.items()}
    is_csv, count = spec.format in ("csv", "tsv"), 0
    if limit == 0:
        return
    with open(path, encoding=spec.encoding, newline="" if is_csv else None) as f:
        try:
            for index, line, row in (_csv_rows if is_csv else _line_rows)(spec, f, path):
                where = f"{path}:{line}"

                def get(name: str, key: str) -> Any:
                    return _get(spec, row, name, key, where)

                if any((_text(get(c, f"filter.{c}")) or "").strip() not in ok for c, ok in allowed.items()):
                    continue
                label = None
                if cols.label:
                    label = (_text(get(cols.label, "columns.label")) or "").strip()
                    if labels is not None:
                        if label not in labels:
                            continue
                        label = labels[label]
                yield Item(
                    id=(_text(get(cols.id, "columns.id")) or "") if cols.id else str(index),
                    text=_text(get(cols.text, "columns.text")) or "",
                    target=_text(get(cols.target, "columns.target")) if cols.target else None,
                    label=label,
                    comments=_comments(get(cols.comments, "columns.comments"), cols, where) if cols.comments else (),
                    raw=row,
                )
                count += 1
                if limit is not None and count >= limit:
                    return
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{path}: cannot decode as {spec.encoding} ({exc.reason}); "
                               "check encoding: in the spec") from None


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False)


def _get(spec: DatasetSpec, row: dict[str, Any], name: str, key: str, where: str) -> Any:
    if name in row:
        return row[name]
    if spec.format == "jsonl" and "." in name:
        value: Any = row
        for part in name.split("."):
            if not isinstance(value, dict) or part not in value:
                break
            value = value[part]
        else:
            return value
    raise DatasetError(f"{where}: {key}: row has no column {name!r}")


def _comments(value: Any, cols: Columns, where: str) -> tuple[Comment, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise DatasetError(f"{where}: columns.comments: {cols.comments!r} is not a list")
    out = []
    for i, c in enumerate(value):
        if isinstance(c, str):
            out.append(Comment(c))
            continue
        if not isinstance(c, dict) or cols.comment_text not in c:
            raise DatasetError(f"{where}: columns.comment_text: comment {i} has no {cols.comment_text!r} key")
        t = c.get(cols.comment_time)
        try:
            time = None if t is None or t == "" else float(t)
        except (TypeError, ValueError):
            raise DatasetError(f"{where}: columns.comment_time: comment {i} time {t!r} is not a number") from None
        out.append(Comment(_text(c[cols.comment_text]) or "", time))
    return tuple(out)


Row = Iterator[tuple[int, int, dict[str, Any]]]


def _csv_rows(spec: DatasetSpec, f: TextIO, path: Path) -> Row:
    """(data-row index, first line of the record, header -> value) for csv/tsv files."""
    delimiter = spec.separator or ("\t" if spec.format == "tsv" else ",")
    quoting: dict[str, Any] = {"quoting": csv.QUOTE_NONE, "quotechar": None} if spec.quoting == "none" else {}
    reader = csv.reader(f, delimiter=delimiter, **quoting)
    header: list[str] | None = None
    previous = index = 0
    try:
        for row in reader:
            start, previous = previous + 1, reader.line_num
            if not row:
                continue
            if header is None:
                header = [row[0].lstrip("\ufeff"), *row[1:]]
                declared = [(f"columns.{k}", getattr(spec.columns, k)) for k in _ROW_COLUMNS]
                declared += [(f"filter.{k}", k) for k in spec.filter]
                for key, name in declared:
                    if name is not None and name not in header:
                        raise DatasetError(f"{path}:{start}: {key}: column {name!r} not in header "
                                           f"(have: {', '.join(header)})")
                continue
            yield index, start, dict(zip(header, row))
            index += 1
    except csv.Error as exc:
        raise DatasetError(f"{path}:{reader.line_num}: {exc}") from None


def _line_rows(spec: DatasetSpec, f: TextIO, path: Path) -> Row:
    """jsonl: one JSON object per line; lines: fields "0" and "1" around the first separator."""
    index = 0
    for number, line in enumerate(f, 1):
        line = line.rstrip("\r\n").lstrip("\ufeff") if number == 1 else line.rstrip("\r\n")
        if not line.strip():
            continue
        if spec.format == "lines":
            parts = line.split(" " if spec.separator is None else spec.separator, 1)
            row = {str(i): part for i, part in enumerate(parts)}
        else:
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{number}: invalid JSON: {exc.msg} (column {exc.colno})") from None
            if not isinstance(row, dict):
                raise DatasetError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
        yield index, number, row
        index += 1
