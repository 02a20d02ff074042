"""Every key of a scenario model as a reference row: key path, type, default, meaning.

Walked from the pydantic models themselves (their annotations, constraints, defaults and key
docstrings), so docs/scenarios.md (moot.contract.docs) cannot drift from what `validate` accepts.
"""

from __future__ import annotations

import inspect
import re
import types
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Iterator, Literal, Optional, Sequence, Union, get_args, get_origin

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from moot.scenario.keydocs import key_docstrings

NOUNS = {str: "string", int: "integer", float: "number", bool: "boolean"}
BOUNDS = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}


@dataclass(frozen=True)
class Key:
    path: str
    type: str
    default: str
    meaning: str


@dataclass(frozen=True)
class Walk:
    """How to walk: blocks documented elsewhere (class -> link text), and meanings for keys
    whose model gives none (path -> meaning)."""

    elsewhere: dict[type, str]
    fallback: Callable[[str], str] = lambda path: ""


def keys(model: type[BaseModel], walk: Walk, prefix: str = "") -> Iterator[Key]:
    """The rows of `model`'s keys under `prefix`, each followed by the keys of the block it holds
    (unless that block is documented elsewhere)."""
    for name, field in model.model_fields.items():
        path = f"{prefix}.{name}" if prefix else name
        held, suffix = held_model(field.annotation)
        yield Key(path, type_text(field.annotation, field.metadata), default_text(field, held, walk),
                  meaning_of(model, name, field, held) or walk.fallback(path))
        if held is not None and held not in walk.elsewhere:
            yield from keys(held, walk, path + suffix)


def held_model(annotation: Any) -> tuple[Optional[type[BaseModel]], str]:
    """The block a key holds (itself, optional, a list of them or a mapping to them) and the path
    suffix of its keys: "" | "[]" | ".<key>"."""
    annotation = _strip(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, ""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list:
        return held_model(args[0])[0], "[]"
    if origin is dict:
        return held_model(args[1])[0], ".<key>"
    if _is_union(origin):
        found = [held_model(a) for a in args if a is not type(None)]
        return found[0] if len(found) == 1 else (None, "")
    return None, ""


def held_paths(model: type[BaseModel], stop: frozenset[type[BaseModel]] = frozenset(), prefix: str = ""
               ) -> dict[type[BaseModel], list[str]]:
    """Every block `model` holds, however deep (not inside the `stop` blocks), with the key paths
    where it is held."""
    found: dict[type[BaseModel], list[str]] = {}
    for name, field in model.model_fields.items():
        path = f"{prefix}.{name}" if prefix else name
        held, suffix = held_model(field.annotation)
        if held is None:
            continue
        found.setdefault(held, []).append(path + suffix)
        if held not in stop:
            for block, paths in held_paths(held, stop, path + suffix).items():
                found.setdefault(block, []).extend(paths)
    return found


def block_noun(model: type[BaseModel]) -> str:
    """What a block is called in the type column: its schema title (AgentSpec: agent) if it set
    one, else mapping."""
    return model.model_config.get("title") or "mapping"


# --- types ------------------------------------------------------------------------------------
def type_text(annotation: Any, metadata: Sequence[object] = ()) -> str:
    """`integer 1-100`, `list of at least 2 agents`, `string or null`, ..."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return type_text(args[0], [*metadata, *args[1:]])
    limits = _limits(metadata)
    if _is_union(origin) or origin is Literal:
        return either(_alternatives(annotation))
    if origin is list:
        return _sized("list of " + _plural(type_text(args[0])), limits.get("min_length"))
    if origin is dict:
        return f"mapping of {type_text(args[0])} to {type_text(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return block_noun(annotation)
    return _scalar(NOUNS.get(annotation, getattr(annotation, "__name__", str(annotation))), limits)


def _scalar(noun: str, limits: dict[str, object]) -> str:
    if limits.get("pattern"):
        return f"{noun} matching `{limits['pattern']}`"
    if limits.get("min_length") == 1:
        return f"non-empty {noun}"
    if "ge" in limits and "le" in limits:
        return f"{noun} {limits['ge']}-{limits['le']}"
    bounds = [f"{sign} {limits[k]}" for k, sign in BOUNDS.items() if k in limits]
    return f"{noun} {', '.join(bounds)}" if bounds else noun


def _sized(text: str, min_length: object) -> str:
    if not min_length:
        return text
    return "non-empty " + text if min_length == 1 else text.replace("list of ", f"list of at least {min_length} ", 1)


def _plural(text: str) -> str:
    return re.sub(r"^(non-empty )?(\w+)", r"\1\2s", text, count=1) if not text.startswith("`") else text


def _alternatives(annotation: Any) -> list[str]:
    """The choices of a union or Literal, flattened: `a`, `b`, string, null."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return [f"`{v}`" for v in args]
    if _is_union(origin):
        return [word for arg in args for word in _alternatives(arg)]
    return ["null"] if annotation is type(None) else [type_text(annotation)]


def either(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _limits(metadata: Sequence[object]) -> dict[str, object]:
    """Constraints (ge, gt, le, lt, min_length, pattern) from a field's metadata, however nested."""
    found: dict[str, object] = {}
    for item in metadata:
        if isinstance(item, FieldInfo):
            found.update(_limits(item.metadata))
        for name in ("ge", "gt", "le", "lt", "min_length", "pattern"):
            if getattr(item, name, None) is not None:
                found[name] = getattr(item, name)
    return found


def _strip(annotation: Any) -> Any:
    return get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation


def _is_union(origin: Any) -> bool:
    return origin is Union or origin is types.UnionType


# --- defaults and meanings ---------------------------------------------------------------------
def default_text(field: FieldInfo, held: Optional[type[BaseModel]], walk: Walk) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if not isinstance(value, BaseModel):
        return value_text(value)
    where = f"see {walk.elsewhere[held]}" if held in walk.elsewhere else "see below"
    changed = value.model_dump(exclude_defaults=True)
    return f"{value_text(changed)}, the rest: {where}" if changed else where


def value_text(value: Any) -> str:
    """A default as YAML: `0.7`, `null`, `[favor, against]`, `{default: local}`, `""`."""
    if value == "":
        return '`""`'
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=10_000).strip()
    return f"`{text.removesuffix('...').strip()}`"


def meaning_of(model: type[BaseModel], name: str, field: FieldInfo, held: Optional[type[BaseModel]]) -> str:
    """The key's description or docstring, else the docstring of the block it holds; on one line."""
    text = (field.description or key_docstrings(model).get(name)
            or (held.__doc__ if held is not None else None) or "")
    return " ".join(inspect.cleandoc(text).split())
