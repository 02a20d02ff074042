"""Results that take long to compute (a bootstrap over many units, an experiment's analysis),
computed one at a time in a background thread (which also bounds the memory they take) and kept
by key, so a page is served at once and its live stream shows them when they are ready."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Hashable

KEPT = 512  # results kept (then forgotten all at once: they are recomputed when asked again)


class Deferred:
    """See the module docstring; `inline`: compute everything when asked (the bundle)."""

    def __init__(self, inline: bool = False):
        self.inline = inline
        self._done: dict[Hashable, Any] = {}
        self._queued: set[Hashable] = set()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="moot-view-deferred")

    def value(self, key: Hashable, quick: bool, compute: Callable[[], Any]) -> tuple[bool, Any]:
        """(True, the result) when it is known or `quick` to compute (then computed now), else
        (False, None) and it is computed in the background."""
        with self._lock:
            if key in self._done:
                return True, self._done[key]
            queued = key in self._queued
            if not (self.inline or quick):
                self._queued.add(key)
        if self.inline or quick:
            return True, self._keep(key, compute)
        if not queued:
            self._pool.submit(self._keep, key, compute)
        return False, None

    def _keep(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        try:
            found = compute()
            with self._lock:
                if len(self._done) >= KEPT:
                    self._done.clear()
                self._done[key] = found
            return found
        finally:  # a computation that raised is tried again when next asked
            with self._lock:
                self._queued.discard(key)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
