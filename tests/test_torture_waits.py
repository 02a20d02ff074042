"""Torture: waits are visible. A wait before a retry of SHOWN_WAIT_S or more — what a 429's
`Retry-After` asks, or the scenario's backoff — is one line on stderr while it waits, --quiet or
not: what waits, how long, why (never the server's own words). A shorter wait says nothing. A run
stopped while it waits stops at once.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest

from backend_support import loopback_only  # noqa: F401
from fault_server import FaultServer
from moot.models.calls import SHOWN_WAIT_S
from torture_support import case, moot_process, remote, write

ITEM = ["--input", "text=Cut taxes now!", "--input", "target=taxes"]


def cola(tmp_path, backoff: float):
    return write(tmp_path / "cola.yaml", "protocol: cola\nmodels: {default: 'openai:fault'}\nmax_unparsed: 1\n"
                                         f"retry: {{attempts: 3, backoff_s: {backoff}, timeout_s: 5}}\n")


class Lines:
    """A process's stderr read as it comes: each line with when it arrived."""

    def __init__(self, proc):
        self.lines: list[tuple[float, str]] = []
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc) -> None:
        for line in proc.stderr:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def wait_for(self, start: str, timeout: float = 60) -> tuple[float, str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [(at, line) for at, line in self.lines if line.startswith(start)]
            if found:
                return found[0]
            time.sleep(0.02)
        raise AssertionError(f"no line starting {start!r}: {self.lines}")


@pytest.mark.parametrize("why", ["Retry-After", "backoff"])
def test_a_long_wait_is_one_line_while_it_waits_even_when_quiet(why, tmp_path):
    seconds = int(SHOWN_WAIT_S) + 1
    mode, backoff, retry_after = (("status-429", 0.05, str(seconds)) if why == "Retry-After"
                                  else ("once-503", seconds, "1"))
    with FaultServer(mode, retry_after=retry_after) as server, case("fault modes", "waits"):
        proc = moot_process(cola(tmp_path, backoff), *ITEM, "--out", tmp_path / "run", "--quiet",
                            *remote(server.url))
        lines = Lines(proc)
        said_at, line = lines.wait_for("waiting ")
        assert proc.wait(timeout=60) == 0
        lines.thread.join(5)
        first = server.requests[0]
        again = next(r for r in server.requests[1:] if r.signature == first.signature)
        assert said_at < again.at - (seconds - 1)  # said while waiting, not after
        assert again.at - first.at >= seconds
        reason = ("the server asked to wait (HTTP 429, Retry-After)" if why == "Retry-After"
                  else "backoff after attempt 1 of 3 failed (HTTP 503)")
        assert line.startswith(f"waiting {seconds}s before retrying openai:fault (") and line.endswith(reason), line
        assert [text for _, text in lines.lines] == [line]  # the only line of a quiet run


def test_a_short_wait_says_nothing(tmp_path):
    with FaultServer("once-503") as server, case("fault modes", "waits"):
        proc = moot_process(cola(tmp_path, SHOWN_WAIT_S / 4), *ITEM, "--out", tmp_path / "run", "--quiet",
                            *remote(server.url))
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and err == "", err


def test_a_run_stopped_during_a_long_wait_stops_at_once(tmp_path):
    """A server asking for a day is waited for as long as moot allows (MAX_RETRY_AFTER_S), said
    so, and SIGTERM ends the wait at once, the unit recorded as interrupted."""
    from moot.models.calls import MAX_RETRY_AFTER_S

    with FaultServer("status-429", retry_after="86400") as server, case("fault modes", "waits"):
        proc = moot_process(cola(tmp_path, 0.05), *ITEM, "--out", tmp_path / "run", "--quiet", *remote(server.url))
        lines = Lines(proc)
        _, line = lines.wait_for("waiting ")
        assert line.startswith(f"waiting {MAX_RETRY_AFTER_S:.0f}s before retrying"), line
        proc.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        assert proc.wait(timeout=30) == 143
        assert time.monotonic() - stopped < 3
        lines.thread.join(5)
        assert [text for _, text in lines.lines][1:] == [
            f"terminated (SIGTERM): run the same command again to continue ({tmp_path / 'run'})"]
