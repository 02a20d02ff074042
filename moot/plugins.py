"""Installed protocols, found on demand: moot's own (moot.protocols.registry) and those of any
package that declares an entry point in the `moot.protocols` group.

Importing a protocol registry declares its protocols in moot.contract.registry.PROTOCOLS; this
module only finds and imports those registries, by name, and imports no moot module itself, so
every layer may ask for them (moot.contract.registry.load_installed registers them all).
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
def find_installed() -> None:
    """Import every installed protocol registry (once per process): moot's own and the entry points'."""
    declare_builtin()
    for point in entry_points(group="moot.protocols"):
        point.load()
