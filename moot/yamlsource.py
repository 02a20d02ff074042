"""Strict YAML reading that remembers where every key came from.

Errors in user files must name the file, the line and the key path, so we compose the
YAML node tree once (safe loader only) and keep a map from key paths to line numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

KeyPath = tuple[Any, ...]


class SourceError(ValueError):
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
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SourceError(path, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(path, f"cannot read: {exc}") from None
    return parse_yaml(text, str(path))


def parse_yaml(text: str, file: str) -> YamlSource:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SourceError(file, f"invalid YAML: {problem}", line=mark.line + 1 if mark else None) from None
    source = YamlSource(file, data)
    if node is not None:
        source.lines[()] = node.start_mark.line + 1
        _walk(node, (), source)
    return source


def _walk(node: yaml.Node, key: KeyPath, source: YamlSource) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            name = key_node.value
            if name in seen:
                raise SourceError(source.file, "duplicate key", key + (name,), key_node.start_mark.line + 1)
            seen.add(name)
            source.lines[key + (name,)] = key_node.start_mark.line + 1
            _walk(value_node, key + (name,), source)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            source.lines[key + (index,)] = item.start_mark.line + 1
            _walk(item, key + (index,), source)
