"""Checking a protocol against the contract when it registers, with one clear line per problem.

Every field of Protocol is checked against its declared type (so a hook added to the contract
is checked too): a class, `type[X]` (a subclass), a tuple of X, Optional, Literal, a Mapping,
and a callable — async when it returns an Awaitable, taking the declared number of arguments.
Then the rules types cannot say: the scenario schema names the protocol, inputs are distinct,
deciders come with a rescore, event types fit the log's registry.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Optional, TypeVar, Union, get_args, get_origin, get_type_hints

from moot.contract.protocol import Protocol, ProtocolError

SHARED_KEYS = ("models", "generation", "retry", "backends")  # what ScenarioBase says every scenario has


def check(protocol: Protocol[Any]) -> None:
    """Refuse a protocol that does not keep the contract (ProtocolError naming it and the field)."""
    if not isinstance(protocol, Protocol):
        raise ProtocolError(f"{protocol!r} is not a Protocol")
    name = protocol.name
    hints = get_type_hints(Protocol)
    for spec in dataclasses.fields(Protocol):
        problem = mismatch(getattr(protocol, spec.name), hints[spec.name])
        if problem:
            raise ProtocolError(f"{name}: {spec.name} {problem}")
    declared = protocol.scenario.model_fields.get("protocol")
    if declared is None or name not in get_args(declared.annotation):
        raise ProtocolError(f"{name}: its scenario schema must have `protocol: Literal[{name!r}]`")
    missing = [key for key in SHARED_KEYS if key not in protocol.scenario.model_fields]
    if missing:
        raise ProtocolError(f"{name}: its scenario schema must have {', '.join(missing)} (moot.scenario.blocks)")
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


def mismatch(value: object, hint: Any) -> Optional[str]:
    """Why `value` does not fit the type `hint`; None when it does."""
    if isinstance(hint, TypeVar):
        hint = hint.__bound__ or object
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        fits = [mismatch(value, a) for a in args if a is not type(None)]
        return None if None in fits else (fits[0] if len(fits) == 1 else f"must be {shown(hint)}")
    if value is None:
        return "is missing"
    if origin is Literal:
        return None if value in args else f"must be one of {', '.join(map(repr, args))}"
    if origin is type:
        bound = (args[0].__bound__ or object) if isinstance(args[0], TypeVar) else args[0]
        ok = isinstance(value, type) and issubclass(value, bound)
        return None if ok else f"must be a subclass of {bound.__name__}, not {value!r}"
    if origin is tuple:
        if not isinstance(value, tuple):
            return f"must be a tuple, not {type(value).__name__}"
        wanted = [args[0]] * len(value) if len(args) == 2 and args[1] is Ellipsis else list(args)
        if len(wanted) != len(value):
            return f"must have {len(wanted)} items"
        found = [mismatch(v, w) for v, w in zip(value, wanted)]
        return next((f"item {n}: {p}" for n, p in enumerate(found) if p), None)
    if origin is Callable:
        return _callable(value, args)
    if origin is Mapping:
        return None if isinstance(value, Mapping) else "must be a mapping"
    cls = origin or hint
    return None if isinstance(value, cls) else f"must be {cls.__name__}, not {type(value).__name__}"


def _callable(value: object, args: tuple[Any, ...]) -> Optional[str]:
    if not callable(value):
        return "must be a function"
    params, result = (args[0], args[1]) if args else (Ellipsis, object)
    wants_async = get_origin(result) is Awaitable
    if wants_async and not inspect.iscoroutinefunction(value):
        return "must be an async function"
    if params is not Ellipsis:
        try:
            inspect.signature(value).bind(*params)
        except TypeError:
            return f"must take {len(params)} argument(s)"
        except ValueError:  # a builtin without a signature
            pass
    return None


def shown(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")
