"""Names and values that are not UTF-8: Python gives such bytes (a Latin-1 file name, an argument
typed in another encoding) as surrogates, which moot's records (JSON, UTF-8) cannot hold. They are
refused in one line naming where they came from, with the bytes shown as `\\xe9`, before anything
is written."""

from __future__ import annotations

from typing import Any, Mapping

from moot.errors import UsageError


def undecodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def shown(text: str) -> str:
    """`text` with the bytes that are not UTF-8 written as `\\xNN`."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def refuse_undecodable(value: Any, key: str = "") -> None:
    """A string in `value` (at `key`; mappings and lists looked into) that is not UTF-8 is a
    UsageError naming its key."""
    if isinstance(value, Mapping):
        for name, inner in value.items():
            refuse_undecodable(inner, f"{key}.{name}" if key else str(name))
    elif isinstance(value, (list, tuple)):
        for number, inner in enumerate(value):
            refuse_undecodable(inner, f"{key}[{number}]")
    elif isinstance(value, str) and undecodable(value):
        raise UsageError(f"{key} '{shown(value)}': not UTF-8; moot keeps names and values as UTF-8 text "
                         "(rename the file or folder, or give the value in UTF-8)")
