"""Results that take long to compute (a bootstrap over many units, an experiment's analysis),
computed one at a time in a background thread (which also bounds the memory they take) and kept
by key, so a page is served at once and its live stream shows them when they are ready."""

from __future__ import annotations

import queue
import sys
import threading
from typing import Any, Callable, Hashable, Optional

KEPT = 512  # results kept (then forgotten all at once: they are recomputed when asked again)


class Worker:
    """One daemon thread running the jobs given to it in turn. Stopping, or the process exiting,
    never waits for a job to end (a bootstrap, the facts of thousands of transcripts)."""

    def __init__(self, name: str):
        self.stopped = threading.Event()
        self._jobs: queue.SimpleQueue[Optional[tuple[Callable[..., Any], tuple[Any, ...]]]] = queue.SimpleQueue()
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def submit(self, job: Callable[..., Any], *args: Any) -> None:
        self._jobs.put((job, args))

    def _run(self) -> None:
        while not self.stopped.is_set():
            found = self._jobs.get()
            if found is None:
                return
            job, args = found
            try:
                job(*args)
            except Exception as exc:  # a bug: said once, and the page asks again later
                print(f"moot view: background work failed: {type(exc).__name__}: {exc}", file=sys.stderr)

    def close(self) -> None:
        self.stopped.set()
        self._jobs.put(None)


class Deferred:
    """See the module docstring; `inline`: compute everything when asked (the bundle)."""

    def __init__(self, inline: bool = False):
        self.inline = inline
        self._done: dict[Hashable, Any] = {}
        self._queued: set[Hashable] = set()
        self._lock = threading.Lock()
        self._worker = Worker("moot-view-deferred")

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
            self._worker.submit(self._keep, key, compute)
        return False, None

    def known(self, key: Hashable) -> tuple[bool, Any]:
        """(True, the result) once it is computed; else (False, None), and nothing is started."""
        with self._lock:
            return (True, self._done[key]) if key in self._done else (False, None)

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
        self._worker.close()
