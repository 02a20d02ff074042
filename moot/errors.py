"""moot's errors a user can act on, and did-you-mean suggestions for their messages.

Every error moot reports as one line derives from `MootError`, which carries the process's exit
code (`moot.cli.main` maps by it; there is no hand-kept list). Most are bad input (exit 2):
nothing was written, and the message names the file, line and key, or the option. A class that
was a ValueError before stays one too, so callers that catch ValueError keep working.
"""

from __future__ import annotations

import difflib
from typing import ClassVar, Iterable, Optional

# The process's exit codes (moot.cli): 0 done, 1 a run failed or moot hit a bug, 2 bad input
# (nothing written), 3 the environment refused, 130 interrupted (Ctrl-C; a stop signal: 128 + its
# number, moot.safety.signals), 141 the output was closed.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_ENVIRONMENT, EXIT_INTERRUPTED, EXIT_PIPE = 0, 1, 2, 3, 130, 141
EXIT_UNPARSED = 4  # the run finished but its answers measured nothing (moot.engine.unparsed)


class MootError(Exception):
    """An error with a one-line message for the user; `exit_code` is what the process returns."""

    exit_code: ClassVar[int] = EXIT_USAGE


class UsageError(MootError, ValueError):
    """Bad command-line input; one line."""


def closest(word: str, choices: Iterable[str]) -> Optional[str]:
    """The choice close enough to `word` to be what was meant, if any."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def nearest(word: str, choices: Iterable[str]) -> str:
    """` (did you mean X?)` when one of `choices` is close to `word`, else ""."""
    match = closest(word, choices)
    return f" (did you mean {match!r}?)" if match else ""
