"""The cycle collector around a `moot` process's start-up.

Start-up (AutoGen, pydantic, the openai SDK's ~800 models, the scenario, the dataset, the
backends) builds objects that live as long as the process; collecting cycles among them finds
nothing, again and again: full collections took ~0.15 s of a 1.2 s start-up, and one during a
600-item batch stalled every call in flight for 0.1 s (benchmarks/bench_latency.py). So the
process holds collection off while it starts, then freezes what start-up built (`gc.freeze`:
later collections skip it) and collects as usual from there.

Only the process's entry point holds (moot.cli.main_exit): moot called in-process (tests, a
notebook) leaves the interpreter's collector as it found it.
"""

from __future__ import annotations

import gc

_held = False


def hold() -> None:
    """Start-up begins: no cycle collection until `settle`."""
    global _held
    gc.disable()
    _held = True


def settle() -> None:
    """Start-up is over: what it built is frozen and collection resumes (once; a no-op unless held)."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
