"""Installed protocols, imported once on demand: moot's own (moot.protocols.registry) and those of
any package that declares an entry point in the `moot.protocols` group.

Registering a protocol registers its event types and its view; a transcript read by a process
that has not imported its protocol yet (a bare `moot.log.transcript.load`) finds it here, so the
log and the views import no protocol module.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from importlib.metadata import entry_points

BUILTIN = "moot.protocols.registry"


@lru_cache(maxsize=1)
def declare_builtin() -> None:
    """Declare moot's own protocols by name, importing none of them (each is imported when asked for)."""
    importlib.import_module(BUILTIN)


@lru_cache(maxsize=1)
def load_protocols() -> None:
    """Import every installed protocol registry and every protocol it declares (once per process)."""
    importlib.import_module(BUILTIN)
    for point in entry_points(group="moot.protocols"):
        point.load()
    from moot.contract.registry import PROTOCOLS

    PROTOCOLS.load_all()
