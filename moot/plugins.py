"""Installed protocols, found through the `moot.protocols` entry-point group and imported once.

Registering a protocol registers its event types and its view; a transcript read by a process
that has not imported its protocol yet (a bare `moot.log.transcript.load`) finds it here, so the
log and the views never import a protocol by name. moot's own protocols are one entry point
(pyproject.toml); a package of another protocol declares its own.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import entry_points


@lru_cache(maxsize=1)
def load_protocols() -> None:
    """Import every installed protocol registry (once per process)."""
    for point in entry_points(group="moot.protocols"):
        point.load()
