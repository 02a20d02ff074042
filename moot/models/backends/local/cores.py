"""The embedded model's thread count, from the cores other processes leave idle.

llama.cpp's threads wait for each other at every step of a decode, so a thread on a core another
process is using holds up the whole step. Measured on this project's 2-core machine: idle, 2
threads evaluated prompts at 537-674 tok/s and generated 57-69 tok/s against 1 thread's 318-368
and 42-48 (the default conference, seed 42: 22-26 s against 38-39 s); with other work running, 2
threads generated 4-9 tok/s against 1 thread's 16-30. So, unless `backends.local.n_threads` fixes
it, the thread count is chosen before each request from what other processes used in the moments
before (all CPU time the system counted, Linux /proc/stat, less this process's own), out of the
cores the process can use (`usable_cores`: its CPUs, one per physical core, within a container's
quota). Where that count cannot be read, half of those cores. The thread count does not change
llama.cpp's results (tests/test_cores.py), only their speed.
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

# Another process's average use of a core above this share is a core taken.
TAKEN = 0.25
# A measurement over less time than this keeps the previous choice (the kernel counts in 10 ms ticks).
WINDOW_S = 0.25


@dataclass(frozen=True)
class Sample:
    """When, the CPU seconds every process has used, and the CPU seconds this process has used."""

    wall: float
    busy: float
    own: float


def usable_cores(root: Path = Path("/")) -> int:
    """The cores this process can use: the CPUs it may run on, counted once per physical core
    (a core's hyperthreads share its arithmetic, and llama.cpp runs no faster on both), and no
    more than its control group's CPU quota (a container's `--cpus`). Under `root`, for tests."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    limits = [len(cpus), physical_cores(cpus, root), cgroup_quota(root)]
    return max(1, min(limit for limit in limits if limit is not None))


def physical_cores(cpus: list[int], root: Path) -> Optional[int]:
    """How many distinct physical cores `cpus` are on (Linux sysfs), or None where it is not told."""
    found = set()
    for cpu in cpus:
        topology = root / f"sys/devices/system/cpu/cpu{cpu}/topology"
        try:
            found.add(((topology / "physical_package_id").read_text().strip(), (topology / "core_id").read_text().strip()))
        except OSError:
            return None
    return len(found) or None


def cgroup_quota(root: Path) -> Optional[int]:
    """The control group's CPU quota in whole cores (rounded up), or None when it sets none:
    cgroup v2's cpu.max ("max 100000" or "200000 100000"), else v1's cfs_quota_us / cfs_period_us."""
    for path, split in ((root / "sys/fs/cgroup/cpu.max", False), (root / "sys/fs/cgroup/cpu/cpu.cfs_quota_us", True)):
        try:
            if split:
                quota, period = path.read_text().strip(), (path.parent / "cpu.cfs_period_us").read_text().strip()
            else:
                quota, period = path.read_text().split()
        except (OSError, ValueError):
            continue
        if quota in ("max", "-1"):
            return None
        try:
            return max(1, math.ceil(int(quota) / int(period)))
        except (ValueError, ZeroDivisionError):
            return None
    return None


def threads_for(others: float, cores: int) -> int:
    """Threads for the cores not taken, given other processes' average use in cores."""
    return max(1, min(cores, int(cores - others + TAKEN)))


def system_sample(family: tuple[int, ...] = ()) -> Optional[Sample]:
    """Now's counters, or None where /proc/stat is not there to read. This process's own time
    includes that of the processes in `family` (the embedded model's process counts the process
    it answers as its own: their work alternates)."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(x) for x in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    if len(fields) < 8:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    ticks = os.sysconf("SC_CLK_TCK")
    own = time.process_time() + sum(process_ticks(pid) for pid in family) / ticks
    return Sample(time.monotonic(), (user + nice + system + irq + softirq + steal) / ticks, own)


def process_ticks(pid: int) -> int:
    """The CPU time (user and system) process `pid` has used, in clock ticks; 0 where it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # after the command's name, which may hold anything
        return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    except (OSError, ValueError, IndexError):
        return 0


def others_between(before: Sample, after: Sample) -> float:
    """Other processes' average use, in cores, from one sample to the next."""
    return max(0.0, (after.busy - before.busy) - (after.own - before.own)) / (after.wall - before.wall)


class IdleCores:
    """The thread count for the next request, re-measured when enough time has passed."""

    def __init__(self, cores: Optional[int] = None, sample: Callable[[], Optional[Sample]] = system_sample):
        self.cores = cores or usable_cores()
        self._sample = sample
        self._last = sample()
        self.threads = max(self.cores // 2, 1)

    def choose(self) -> int:
        now = self._sample()
        if now is None or self._last is None:
            return self.threads
        if now.wall - self._last.wall >= WINDOW_S:
            self.threads = threads_for(others_between(self._last, now), self.cores)
            self._last = now
        return self.threads


class ModelLock:
    """The one model's lock (llama.cpp is not reentrant); taking it sets the thread count when it
    is chosen per request (`idle`), so a request runs on the cores that are free as it starts."""

    def __init__(self, llm: Any, threads: int, idle: Optional[IdleCores]):
        self._llm, self._idle, self._lock = llm, idle, threading.Lock()
        self.threads = threads  # what the model runs on now (recorded on each call it answers)

    def __enter__(self) -> "ModelLock":
        self._lock.acquire()
        try:
            if self._idle is not None:
                threads = self._idle.choose()
                if threads != self.threads:
                    self._llm._ctx.set_n_threads(threads, threads)
                    self.threads = threads
        except BaseException:
            self._lock.release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()
