"""Did-you-mean: the nearest valid name to a mistyped one (keys, values, commands, roles)."""

from __future__ import annotations

import difflib
from typing import Iterable, Optional


def closest(word: str, choices: Iterable[str]) -> Optional[str]:
    """The choice close enough to `word` to be what was meant, if any."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def nearest(word: str, choices: Iterable[str]) -> str:
    """` (did you mean X?)` when one of `choices` is close to `word`, else ""."""
    match = closest(word, choices)
    return f" (did you mean {match!r}?)" if match else ""
