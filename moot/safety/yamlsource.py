"""Strict YAML reading that remembers where every key came from.

Errors in user files must name the file, the line and the key path, so we compose the
YAML node tree once (safe loader only) and keep a map from key paths to line numbers. A key written
twice in one mapping is an error; merge keys (`- <<: *base` then `name: Bob`) follow YAML's merge
semantics, the written key overriding the merged one.

A file is untrusted input, so reading it is bounded in time and memory before anything is built:
its size (MAX_BYTES), its nesting (MAX_DEPTH) and the number of values it stands for once every
alias is expanded (MAX_VALUES) — a few hundred bytes of nested aliases ("billion laughs") would
otherwise expand to gigabytes. An alias inside its own anchor (a recursive structure) is refused.
These are checked on the parser's event stream, which holds no tree, so a hostile file is
refused after reading at most MAX_VALUES events; libyaml parses when it is there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml
from moot.errors import MootError

MAX_BYTES = 2 * 1024 * 1024
MAX_DEPTH = 64
MAX_VALUES = 100_000
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MERGE_TAG = "tag:yaml.org,2002:merge"

KeyPath = tuple[Any, ...]


class SourceError(MootError, ValueError):
    """A problem in a user's file, rendered as one line: `file:line: key.path: message`."""

    def __init__(self, file: str | Path, message: str, key: KeyPath = (), line: int | None = None):
        self.file, self.key, self.line, self.detail = str(file), tuple(key), line, message
        super().__init__(self.render())

    def render(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        key = format_key(self.key)
        return f"{where}: {key}: {self.detail}" if key else f"{where}: {self.detail}"


def format_key(key: KeyPath) -> str:
    """`('participants', 1, 'name')` -> `participants[1].name`."""
    out = ""
    for part in key:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


@dataclass
class YamlSource:
    """Parsed YAML data plus the line (1-based) of every key path."""

    file: str
    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line_of(self, key: KeyPath) -> int | None:
        """Line of the deepest known prefix of `key` (a bad value's parent is still useful)."""
        key = tuple(key)
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return self.lines.get(())

    def error(self, key: KeyPath, message: str) -> SourceError:
        return SourceError(self.file, message, key, self.line_of(key))


def read_yaml(path: str | Path) -> YamlSource:
    """Read a YAML file with the safe loader; reject duplicate keys; record key lines."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise SourceError(path, "file not found") from None
    except IsADirectoryError:
        raise SourceError(path, "is a folder, not a YAML file") from None
    except OSError as exc:
        raise SourceError(path, f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise SourceError(path, f"too large for a YAML file (more than {MAX_BYTES // 1024 // 1024} MB)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise SourceError(path, f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the file as UTF-8",
                          line=line) from None
    return parse_yaml(text, str(path))


def parse_yaml(text: str, file: str) -> YamlSource:
    try:
        check_bounds(text, file)
        loader = _LOADER(text)
        source = YamlSource(file, None)
        try:
            node = loader.get_single_node()
            if node is not None:  # before constructing: that folds merge keys into the mappings
                source.lines[()] = node.start_mark.line + 1
                _walk(node, (), source)
            source.data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.reader.ReaderError as exc:
        line = text[:exc.position].count("\n") + 1
        raise SourceError(file, f"invalid YAML: character #x{exc.character:04x} is not allowed "
                                "(binary data, not text?)", line=line) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SourceError(file, f"invalid YAML: {problem}", line=mark.line + 1 if mark else None) from None
    return source


def check_bounds(text: str, file: str) -> None:
    """Refuse a document nested deeper than MAX_DEPTH, or standing for more than MAX_VALUES values
    with its aliases expanded, or with an alias inside its own anchor (see the module docstring).

    The C scanner reads ahead and may refuse a deep document in its own words before the events
    reach MAX_DEPTH; the pure-Python scanner reads lazily, so on such an error it checks again and
    the refusal is ours whatever the library's version says."""
    try:
        _check_bounds(text, file, _LOADER)
    except yaml.YAMLError:
        if _LOADER is not yaml.SafeLoader:
            _check_bounds(text, file, yaml.SafeLoader)
        raise


def _check_bounds(text: str, file: str, loader: type) -> None:
    values = 0  # so far, aliases expanded
    sizes: dict[Optional[str], int] = {}  # anchor -> the values it stands for (once its node has ended)
    open_: list[tuple[int, Optional[str]]] = []  # each open collection: (values before it, its anchor)
    for event in yaml.parse(text, Loader=loader):
        line = event.start_mark.line + 1 if event.start_mark else None
        if isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for _, anchor in open_):
                raise SourceError(file, f"alias *{event.anchor} inside its own anchor (a recursive structure)",
                                  line=line)
            values += sizes.get(event.anchor, 1)
        elif isinstance(event, yaml.ScalarEvent):
            values += 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            if len(open_) >= MAX_DEPTH:
                raise SourceError(file, f"nested deeper than {MAX_DEPTH} levels", line=line)
            open_.append((values, event.anchor))
            values += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            before, anchor = open_.pop()
            if anchor:
                sizes[anchor] = values - before
        if values > MAX_VALUES:
            raise SourceError(file, f"stands for more than {MAX_VALUES:,} values once its aliases are expanded "
                                    "(nested aliases?)", line=line)


def _walk(node: yaml.Node, key: KeyPath, source: YamlSource) -> None:
    """Record every key's line (a merged key's: where it is written in its anchor); refuse a key
    written twice in one mapping; fold merge keys in (`_fold_merges`)."""
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag != MERGE_TAG and key_node.value in seen:
                raise SourceError(source.file, "duplicate key", key + (key_node.value,), key_node.start_mark.line + 1)
            seen.add(key_node.value)
        _fold_merges(node)
        for key_node, value_node in node.value:
            if key_node.tag != MERGE_TAG:
                source.lines[key + (key_node.value,)] = key_node.start_mark.line + 1
                _walk(value_node, key + (key_node.value,), source)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            source.lines[key + (index,)] = item.start_mark.line + 1
            _walk(item, key + (index,), source)


def _fold_merges(node: yaml.MappingNode) -> None:
    """Fold merge keys (`<<: *base`, `<<: [*a, *b]`) into `node` as YAML defines them: a key
    written in the mapping overrides a merged one, and an earlier merged mapping overrides a later
    one. (PyYAML's own folding tells keys apart by object identity, so with keys longer than one
    character the later mapping wins.) A merge of anything but mappings is left for the
    constructor to refuse in its words."""
    merges = [value for key, value in node.value if key.tag == MERGE_TAG]
    if not merges:
        return
    sources = [m for value in merges for m in (value.value if isinstance(value, yaml.SequenceNode) else [value])]
    if not all(isinstance(m, yaml.MappingNode) for m in sources):
        return
    written = [(key, value) for key, value in node.value if key.tag != MERGE_TAG]
    taken = {key.value for key, _ in written}
    inherited = []
    for mapping in sources:
        _fold_merges(mapping)
        for key, value in mapping.value:
            if key.value not in taken:
                taken.add(key.value)
                inherited.append((key, value))
    node.value = inherited + written
