"""Dataset specs (DATA.yaml) and lazy reading of CSV / TSV / JSONL / line-per-item benchmarks.

    path: ../shared/datasets/vast_dev_sample.csv   # relative to the YAML file's folder, or absolute
    format: csv            # csv | tsv | jsonl | lines
    encoding: utf-8        # e.g. latin-1 for SemEval-2016
    quoting: minimal       # csv/tsv: minimal | none (csv.QUOTE_NONE: quotes are plain text)
    separator: " "         # lines: split once on it (default " "); csv/tsv: delimiter override
    columns: {text: Tweet, target: Target, label: Stance}   # also id, comments, comment_text/_time
    labels: {"0": against, "1": favor, "2": neutral}        # value -> protocol label; others skipped
    filter: {"seen?": ["0"]}                                # column -> allowed values, before limit
    target_roles: {Atheism: theologian}                     # a role per target (COLA's domain specialist)
    source: "github.com/..."                                # where a file moot does not ship is published

Column names are literal header names, dots included (`claims.claimCorrectedText`); in jsonl a
dotted name that is not a key is followed as a nested path. No `id`: the 0-based data-row index.
`comments` (jsonl) names a list of objects; `comment_text` / `comment_time` name keys inside them
(default `text` / `time`). An item's `role` (the role it asks for, e.g. COLA's domain specialist)
is its `columns.role` value, else `target_roles` of its target (case-insensitive), else none.
A protocol with inputs of its own (e.g. `question`, `response_a`) names their columns under the
same keys (`columns: {question: q, response_a: a1, ...}`; moot.data.spec.spec_model); `text` is
then optional, and a row is skipped for an empty text only when `text` is named. Label keys are
compared as strings after strip; without `labels` the stripped raw value passes through. Format
`lines` (SST-2, `<label> <sentence>`): fields "0" (before the first separator) and "1" (the rest),
so `columns: {label: "0", text: "1"}`.
Errors are `DatasetError`s with a one-line message `file[:line]: key.path: problem`. Reading is
bounded: rows are read one line at a time, and a line longer than MAX_LINE characters (of any
format; a csv field longer than the csv module's limit) is an error, never read whole into memory.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, TextIO

from moot.data.spec import Columns, DatasetError, DatasetSpec, data_file, load_dataset_spec

__all__ = ["Columns", "Comment", "DatasetError", "DatasetSpec", "Item", "dataset_fingerprint",
           "iter_items", "load_dataset_spec"]


@dataclass(frozen=True)
class Comment:
    text: str
    time: float | None = None


@dataclass(frozen=True)
class Item:
    id: str
    text: str = ""
    target: str | None = None
    label: str | None = None
    comments: tuple[Comment, ...] = ()
    role: str | None = None
    inputs: Mapping[str, str] = field(default_factory=dict, hash=False)  # a protocol's own input columns
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def value(self, key: str) -> object:
        """The value of the input column `key` (None, "" or [] when the row has none)."""
        built_in: dict[str, object] = {"text": self.text, "target": self.target, "comments": list(self.comments),
                                       "role": self.role}
        return built_in[key] if key in built_in else self.inputs.get(key)


def dataset_fingerprint(spec: DatasetSpec) -> str:
    """Hex sha256 of the data file's bytes."""
    with open(data_file(spec), "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def iter_items(spec: DatasetSpec, limit: int | None = None, skipped: Counter[str] | None = None) -> Iterator[Item]:
    """Items read lazily: filter, then label mapping/skipping, then `limit` (None: all).

    Rows left out are counted by reason in `skipped` ("filtered out", "label not in the mapping",
    "empty text"). A negative limit or a missing data file raise at once, bad rows when reached."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    return _items(spec, data_file(spec), limit, Counter() if skipped is None else skipped)


def _items(spec: DatasetSpec, path: Path, limit: int | None, skipped: Counter[str]) -> Iterator[Item]:
    cols = spec.columns
    labels = None if spec.labels is None else {k.strip(): v.strip() for k, v in spec.labels.items()}
    allowed = {c: {v.strip() for v in vals} for c, vals in spec.filter.items()}
    roles = {k.strip().lower(): v.strip() for k, v in spec.target_roles.items()}
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
                    skipped["filtered out"] += 1
                    continue
                label = None
                if cols.label:
                    label = (_text(get(cols.label, "columns.label")) or "").strip()
                    if labels is not None:
                        if label not in labels:
                            skipped["label not in the mapping"] += 1
                            continue
                        label = labels[label]
                text = (_text(get(cols.text, "columns.text")) or "") if cols.text else ""
                if cols.text and not text.strip():
                    skipped["empty text"] += 1
                    continue
                target = _text(get(cols.target, "columns.target")) if cols.target else None
                role = (_text(get(cols.role, "columns.role")) or "").strip() if cols.role else ""
                yield Item(
                    id=(_text(get(cols.id, "columns.id")) or "") if cols.id else str(index),
                    text=text,
                    target=target,
                    label=label,
                    comments=_comments(get(cols.comments, "columns.comments"), cols, where) if cols.comments else (),
                    role=role or roles.get((target or "").strip().lower()),
                    inputs={key: _text(get(name, f"columns.{key}")) or "" for key, name in cols.inputs()},
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
MAX_LINE = 1_000_000  # characters of one jsonl / lines row (csv: the csv module's field limit)


def _csv_rows(spec: DatasetSpec, f: TextIO, path: Path) -> Row:
    """(data-row index, first line of the record, header -> value) for csv/tsv files."""
    delimiter = spec.separator or ("\t" if spec.format == "tsv" else ",")
    quoting: dict[str, Any] = {"quoting": csv.QUOTE_NONE, "quotechar": None} if spec.quoting == "none" else {}
    reader = csv.reader(bounded_lines(f, path), delimiter=delimiter, **quoting)
    header: list[str] | None = None
    previous = index = 0
    try:
        for row in reader:
            start, previous = previous + 1, reader.line_num
            if not row:
                continue
            if header is None:
                header = [row[0].lstrip("\ufeff"), *row[1:]]
                declared = [(f"columns.{k}", name) for k, name in spec.columns.named()]
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
    for number, line in enumerate(bounded_lines(f, path), 1):
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
            except RecursionError:
                raise DatasetError(f"{path}:{number}: invalid JSON: nested too deeply") from None
            if not isinstance(row, dict):
                raise DatasetError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
        yield index, number, row
        index += 1


def bounded_lines(f: TextIO, path: Path) -> Iterator[str]:
    """The lines of `f`, each read up to MAX_LINE characters; a longer one is an error naming it."""
    for number, line in enumerate(iter(lambda: f.readline(MAX_LINE + 1), ""), 1):
        if len(line) > MAX_LINE:
            raise DatasetError(f"{path}:{number}: line longer than {MAX_LINE:,} characters (not a dataset row?)")
        yield line
