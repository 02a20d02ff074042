"""The embedded model's thread count, chosen from the cores other processes leave idle
(moot.models.backends.local.cores): the choice as a table, the measurement from counters, the cores a process
can use (affinity, physical cores, a container's quota), the lock that applies it, and
llama.cpp's results equal whatever the thread count."""

from __future__ import annotations

import os

import numpy as np
import pytest
from backend_support import machine_llama

from moot.models.backends.local.cores import (IdleCores, ModelLock, Sample, cgroup_quota, others_between, physical_cores,
                              system_sample, threads_for, usable_cores)


@pytest.mark.parametrize("others, cores, threads", [
    (0.0, 2, 2), (0.2, 2, 2), (0.3, 2, 1), (1.0, 2, 1), (3.5, 2, 1),
    (0.0, 1, 1), (0.0, 8, 8), (2.0, 8, 6), (2.3, 8, 5), (9.0, 8, 1),
])
def test_threads_are_the_cores_other_processes_leave_idle(others, cores, threads):
    assert threads_for(others, cores) == threads


def test_other_processes_use_is_all_use_less_this_process_s_own():
    before, after = Sample(wall=10.0, busy=100.0, own=5.0), Sample(wall=12.0, busy=103.0, own=7.0)
    assert others_between(before, after) == pytest.approx(0.5)  # 3 CPU seconds in 2 s, 2 of them ours
    assert others_between(before, Sample(12.0, 101.0, 7.0)) == 0.0  # counters' ticks: never below 0


class Counters:
    """Samples given in turn, as the system's counters would be read."""

    def __init__(self, *samples: Sample):
        self.samples = list(samples)

    def __call__(self) -> Sample:
        return self.samples.pop(0)


def test_the_choice_is_measured_again_only_after_enough_time():
    idle = IdleCores(cores=2, sample=Counters(Sample(0.0, 0.0, 0.0), Sample(1.0, 0.1, 0.0),
                                              Sample(1.1, 1.1, 0.0), Sample(2.0, 1.9, 0.0)))
    assert idle.threads == 1  # before any measurement: half the cores
    assert idle.choose() == 2  # 0.1 core used by others over 1 s
    assert idle.choose() == 2  # 0.1 s later: too short to tell, the choice stays
    assert idle.choose() == 1  # others used 1.8 cores over the last second


def test_without_counters_the_choice_is_half_the_cores():
    idle = IdleCores(cores=4, sample=lambda: None)
    assert idle.choose() == 2


def test_this_machine_s_counters_are_read_where_linux_has_them():
    sample = system_sample()
    if sample is None:
        pytest.skip("no /proc/stat here")
    assert sample.busy > 0 and sample.own >= 0


class Context:
    def __init__(self):
        self.set: list[tuple[int, int]] = []

    def set_n_threads(self, threads: int, batch: int) -> None:
        self.set.append((threads, batch))


class Model:
    def __init__(self):
        self._ctx = Context()


def test_the_lock_sets_the_model_s_threads_only_when_the_choice_changes():
    model = Model()
    idle = IdleCores(cores=2, sample=Counters(Sample(0.0, 0.0, 0.0), Sample(1.0, 0.0, 0.0),
                                              Sample(2.0, 0.0, 0.0), Sample(3.0, 2.0, 0.0)))
    lock = ModelLock(model, 1, idle)
    for _ in range(3):
        with lock:
            assert lock.locked()
    assert model._ctx.set == [(2, 2), (1, 1)] and lock.threads == 1 and not lock.locked()


def test_a_fixed_thread_count_is_never_changed():
    model = Model()
    lock = ModelLock(model, 3, None)
    with lock:
        pass
    assert model._ctx.set == [] and lock.threads == 3


@pytest.mark.slow
def test_llama_cpp_gives_the_same_logits_on_one_thread_and_on_two():
    llm = machine_llama(n_ctx=512, n_threads=1, n_threads_batch=1)
    tokens = llm.tokenize(b"The council met to discuss drug policy and harm reduction in the city. " * 8)[:120]
    found = []
    for threads in (1, 2):
        llm._ctx.set_n_threads(threads, threads)
        llm.reset()
        llm._ctx.kv_cache_clear()
        llm.eval(tokens[:100])  # a prompt, in one decode
        prompt = np.array(llm.scores[llm.n_tokens - 1])
        for token in tokens[100:]:  # generation, a token per decode
            llm.eval([token])
        found.append((prompt, np.array(llm.scores[llm.n_tokens - 1])))
    assert all(np.array_equal(a, b) for a, b in zip(*found))


def fake_cpus(root, cores: list[tuple[str, str]]) -> None:
    """sysfs under `root`: cpu N on (package, core) = cores[N]."""
    for n, (package, core) in enumerate(cores):
        topology = root / f"sys/devices/system/cpu/cpu{n}/topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text(f"{package}\n")
        (topology / "core_id").write_text(f"{core}\n")


def test_hyperthreads_of_one_core_count_once(tmp_path):
    fake_cpus(tmp_path, [("0", "0"), ("0", "0"), ("0", "1"), ("0", "1"), ("1", "0")])
    assert physical_cores([0, 1, 2, 3, 4], tmp_path) == 3
    assert physical_cores([0, 1], tmp_path) == 1
    assert physical_cores([0, 9], tmp_path) is None  # not told: no limit from it


@pytest.mark.parametrize("files, quota", [
    ({"sys/fs/cgroup/cpu.max": "max 100000\n"}, None),
    ({"sys/fs/cgroup/cpu.max": "150000 100000\n"}, 2),
    ({"sys/fs/cgroup/cpu.max": "50000 100000\n"}, 1),
    ({"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1\n", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "400000\n", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, 4),
    ({"sys/fs/cgroup/cpu.max": "garbled\n"}, None),
    ({}, None),
])
def test_a_container_s_cpu_quota_bounds_the_cores(tmp_path, files, quota):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cgroup_quota(tmp_path) == quota


def test_the_usable_cores_are_the_fewest_that_any_limit_allows(tmp_path):
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert usable_cores(tmp_path) == cpus  # nothing told under an empty root: the CPUs it may run on
    fake_cpus(tmp_path, [("0", "0")] * 256)  # every CPU a hyperthread of one core
    assert usable_cores(tmp_path) == 1


def test_a_failure_while_setting_the_threads_leaves_the_lock_free():
    class Broken:
        def set_n_threads(self, threads: int, batch: int) -> None:
            raise OSError("gone")

    model = Model()
    model._ctx = Broken()
    lock = ModelLock(model, 1, IdleCores(cores=2, sample=Counters(Sample(0.0, 0.0, 0.0), Sample(1.0, 0.0, 0.0))))
    with pytest.raises(OSError):
        with lock:
            pass
    assert not lock.locked()
