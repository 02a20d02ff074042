"""Torture: Ctrl-C, SIGTERM, SIGHUP, a closed pipe and a second process, on real `moot run` processes against a
slow loopback server. Each stops promptly with one line (or none), the right exit code, no
traceback, every unit's transcript ending in `run_finished`, and the same command then completes
the run with the results of an undisturbed one.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import time

import pytest

from backend_support import loopback_only  # noqa: F401
from fault_server import FaultServer
from torture_support import (  # noqa: F401 - files: a fixture
    CONFERENCE, Ran, assert_clean, case, files, moot, moot_process, outcome_of, read_jsonl, recorded_signatures,
    remote, scenario_files, unit_transcripts, write,
)

DELAY = 0.25  # seconds per reply: a batch takes several seconds, long enough to be interrupted


def batch_argv(directory, url, *extra):
    return [directory / "cola.yaml", "--dataset", directory / "data.yaml", "--out", directory / "run",
            "--concurrency", 2, *remote(url), *extra]


def conference_argv(directory, url, *extra):
    return [directory / "conference.yaml", "--out", directory / "run", *remote(url), *extra]


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory):
    """The batch and the conference against a healthy, fast server."""
    directory = scenario_files(tmp_path_factory.mktemp("undisturbed"))
    found = {}
    with FaultServer("ok") as server:
        for kind, argv in (("batch", batch_argv), ("conference", conference_argv)):
            ran = moot(*argv(directory, server.url, "--quiet"))
            assert ran.code == 0, ran.err
            found[kind] = outcome_of(directory / "run")
            os.rename(directory / "run", directory / kind)
    return found


def wait_for_requests(server: FaultServer, proc, count: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while len(server.requests) < count:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run sent no request"
        time.sleep(0.02)


def ends_of(folder) -> list[tuple[str, str, str]]:
    """Each unit transcript's last event: (type, status, stop_reason)."""
    ends = []
    for path in unit_transcripts(folder):
        last = read_jsonl(path)[-1]
        ends.append((last["type"], last.get("status"), last.get("stop_reason")))
    return ends


def resumes_to(directory, argv, expected) -> None:
    finished = recorded_signatures(directory / "run")
    with FaultServer("ok") as healthy:
        ran = moot(*argv(directory, healthy.url, "--quiet"))
    assert ran.code == 0, ran.err
    assert not finished & set(healthy.signatures()), "a finished call was sent again"
    assert outcome_of(directory / "run") == expected


# signal -> (exit code, the line's first words, the stop reason each running unit records)
STOPS = {"SIGINT": (130, "interrupted", "interrupted by the user"),
         "SIGTERM": (143, "terminated (SIGTERM)", "terminated (SIGTERM)"),
         "SIGHUP": (129, "hung up (SIGHUP)", "hung up (SIGHUP)")}


@pytest.mark.parametrize("name", sorted(STOPS))
@pytest.mark.parametrize("kind", ["batch", "conference"])
def test_a_stop_signal_stops_at_once_with_one_line_and_resumes(kind, name, files, undisturbed):
    """Ctrl-C, SIGTERM (kill, a service manager, a batch system's time limit) and SIGHUP (the
    terminal closed) are one clean stop: one line, the running units recorded as interrupted."""
    argv = batch_argv if kind == "batch" else conference_argv
    code, words, reason = STOPS[name]
    with case("fault modes", "signals"):
        with FaultServer("ok", delay=DELAY) as server:
            proc = moot_process(*argv(files, server.url))
            wait_for_requests(server, proc, 3)
            proc.send_signal(getattr(signal, name))
            sent = time.monotonic()
            out, err = proc.communicate(timeout=30)
            took = time.monotonic() - sent
        assert proc.returncode == code, err
        assert took < 3, f"{name} took {took:.1f}s to stop the run"
        ran = Ran(proc.returncode, out, err)
        assert_clean(ran)
        said = [line for line in ran.err_lines if not line.startswith("[")]  # the batch's status lines
        assert said == [f"{words}: run the same command again to continue ({files / 'run'})"], err
        assert {end[:2] for end in ends_of(files / "run")} <= {("run_finished", "interrupted"),
                                                               ("run_finished", "completed")}
        assert ("run_finished", "interrupted", reason) in ends_of(files / "run")
        resumes_to(files, argv, undisturbed[kind])


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_stop_signal_outside_a_run_is_one_line_too(name, tmp_path):
    """A command that is not running units (here `replay`, blocked writing to a reader that does
    not read) stops on SIGTERM or SIGHUP as on Ctrl-C: one line, 128 + the signal's number."""
    code, words, _ = STOPS[name]
    scenario = write(tmp_path / "c.yaml", CONFERENCE.replace("'openai:fault'", "scripted").replace(
        "[first question, second question, third question]", "[one, two, three, four, five, six]"))
    assert moot(scenario, "--out", tmp_path / "run", "--quiet").code == 0
    with case("fault modes", "signals"):
        read, write_end = os.pipe()
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)  # the replay (about 5 kB) fills it and waits
        proc = moot_process("replay", tmp_path / "run", stdout=write_end)
        os.close(write_end)
        deadline = time.monotonic() + 30
        while not select.select([read], [], [], 0.05)[0]:  # it has begun to write
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.5)  # the pipe is full: replay waits in a write
        proc.send_signal(getattr(signal, name))
        err = proc.stderr.read()
        assert proc.wait(timeout=30) == code, err
        os.close(read)
        assert err.splitlines() == [words], err


def test_a_closed_pipe_ends_the_run_quietly_and_it_resumes(files, undisturbed):
    with case("fault modes"):
        with FaultServer("ok", delay=DELAY) as server:
            read, write_end = os.pipe()
            proc = moot_process(*conference_argv(files, server.url), stdout=write_end)
            os.close(write_end)
            assert os.read(read, 64)  # the first turn's heading: then the reader goes away (`| head -1`)
            os.close(read)
            err = proc.stderr.read()
            code = proc.wait(timeout=30)
        assert code == 141, err
        assert err == ""
        assert ends_of(files / "run") == [("run_finished", "interrupted", "output closed")]
        resumes_to(files, conference_argv, undisturbed["conference"])


def test_a_second_process_on_the_same_folder_is_refused_and_nothing_doubles(files, undisturbed):
    with case("bad inputs"):
        with FaultServer("ok", delay=0.05) as server:
            first = moot_process(*batch_argv(files, server.url, "--quiet"))
            wait_for_requests(server, first, 1)
            server.delay = 0.3  # the first run is still busy when the second starts on a loaded machine (< timeout_s)
            second = moot_process(*batch_argv(files, server.url, "--quiet"))
            out, err = second.communicate(timeout=60)
            server.delay = 0.05
            first_out, first_err = first.communicate(timeout=120)
        assert first.returncode == 0, first_err
        assert second.returncode == 2, err
        assert err.strip().splitlines() == [f"error: {files / 'run'}: in use by another moot process "
                                            f"(pid {first.pid}); wait for it to finish or choose another --out"]
        assert outcome_of(files / "run") == undisturbed["batch"]  # every item once, every transcript whole
        sent = server.signatures()
        assert len(sent) == len(set(sent)), "a call was sent twice"
