"""Every stop signal is a clean stop: SIGINT (Ctrl-C), SIGTERM (`kill`, a service manager, a batch
system's time limit) and SIGHUP (the terminal went away) all stop moot the same way — one line,
running units recorded as interrupted, resumable — and exit with 128 + the signal's number (130,
143, 129), as a shell reports a process a signal ended.

Outside a run's event loop, SIGTERM and SIGHUP raise `StopSignal` where SIGINT raises
KeyboardInterrupt (`install`, once per process); inside it, `routed_to` hands each of them to the
run's stop (moot.engine.runner.Stop) so the running units record why they stopped; a second stop
signal leaves at once.
"""

from __future__ import annotations

import asyncio
import os
import signal
from contextlib import contextmanager
from types import FrameType
from typing import Callable, Iterator, Optional

# signal -> (what a unit's transcript records as its stop reason, the line's first words)
STOP_SIGNALS = {signal.SIGINT: ("interrupted by the user", "interrupted"),
                signal.SIGTERM: ("terminated (SIGTERM)", "terminated (SIGTERM)"),
                signal.SIGHUP: ("hung up (SIGHUP)", "hung up (SIGHUP)")}


class StopSignal(KeyboardInterrupt):
    """SIGTERM or SIGHUP outside a run's event loop: handled where Ctrl-C is."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum: int, frame: Optional[FrameType]) -> None:
    raise StopSignal(signum)


def install() -> None:
    """SIGTERM and SIGHUP raise StopSignal (the process's entry point calls this once)."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):  # not when the parent made us ignore it (nohup)
            signal.signal(sig, _raise)


def signal_of(reason: Optional[str]) -> Optional[int]:
    """The stop signal whose recorded reason is `reason`, if any."""
    return next((sig for sig, (recorded, _) in STOP_SIGNALS.items() if recorded == reason), None)


def exit_code(exc_or_signum: BaseException | int) -> int:
    """128 + the signal's number: 130 for Ctrl-C (a KeyboardInterrupt), 143 SIGTERM, 129 SIGHUP."""
    if isinstance(exc_or_signum, int):
        return 128 + exc_or_signum
    return 128 + getattr(exc_or_signum, "signum", signal.SIGINT)


def headline(exc_or_signum: BaseException | int) -> str:
    """`interrupted`, `terminated (SIGTERM)` or `hung up (SIGHUP)`: how the stop line begins."""
    sig = exc_or_signum if isinstance(exc_or_signum, int) else getattr(exc_or_signum, "signum", signal.SIGINT)
    return STOP_SIGNALS[signal.Signals(sig)][1]


@contextmanager
def routed_to(stop: Callable[[str], None], already: Callable[[], bool]) -> Iterator[None]:
    """While the block runs (inside the running event loop), each stop signal calls `stop(reason)`
    in the loop; when `already()` says the run is stopping, a further one exits at once. The
    handlers in place before are restored after (Python's, and asyncio's own for SIGINT)."""
    loop = asyncio.get_running_loop()

    def handler(signum: int, frame: Optional[FrameType]) -> None:
        if already():
            os._exit(exit_code(signum))
        loop.call_soon_threadsafe(stop, STOP_SIGNALS[signal.Signals(signum)][0])

    previous = {}
    try:
        for sig in STOP_SIGNALS:
            if signal.getsignal(sig) != signal.SIG_IGN:
                previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread: signals stay as they were
        pass
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before if before is not None else signal.SIG_DFL)
