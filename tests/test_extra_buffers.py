"""Whether the embedded model uses llama.cpp's extra buffer types (moot.models.backends.local.extra_buffers): the
setting, the check in a child process (one that ends well, fails, crashes or hangs), the answer
kept per machine, llama.cpp build and model file, and a crash that turns them off."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

from moot.models.backends.local.extra_buffers import (Finding, choose, cpu_identity, exit_cause, machine_key, read_store,
                                       remember_crash, run_check)


def never(path: str) -> Finding:
    raise AssertionError("the check ran where it should not have")


def counted(safe: bool):
    calls: list[str] = []

    def check(path: str) -> Finding:
        calls.append(path)
        return Finding(safe, "checked", 0.5)

    return check, calls


@pytest.fixture
def model(tmp_path) -> str:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    return str(path)


@pytest.mark.parametrize("setting, use", [("on", True), ("off", False)])
def test_the_setting_decides_without_a_check(tmp_path, model, setting, use):
    choice = choose(setting, model, check=never, store=tmp_path / "store.json")
    assert (choice.use, choice.by) == (use, "setting")
    assert not (tmp_path / "store.json").exists()


@pytest.mark.parametrize("safe", [True, False])
def test_auto_checks_once_per_machine_and_keeps_the_answer(tmp_path, model, safe):
    store = tmp_path / "cache" / "moot" / "extra-buffers.json"
    check, calls = counted(safe)
    first = choose("auto", model, check=check, store=store)
    again = choose("auto", model, check=never, store=store)
    assert (first.use, first.by) == (safe, "check") and (again.use, again.by) == (safe, "cached")
    assert calls == [model]
    kept = read_store(store)[machine_key(model)]
    assert kept["safe"] is safe and kept["seconds"] == 0.5


def test_another_model_file_or_build_is_checked_again(tmp_path, model):
    store = tmp_path / "store.json"
    check, calls = counted(True)
    choose("auto", model, check=check, store=store)
    Path(model).write_bytes(b"GGUF, another version")  # size and time change
    choose("auto", model, check=check, store=store)
    assert len(calls) == 2


@pytest.mark.parametrize("content", ["", "not json", "[1, 2]", '{"KEY": {"safe": "yes"}}'])
def test_a_damaged_store_runs_the_check_again(tmp_path, model, content):
    store = tmp_path / "store.json"
    store.write_text(content.replace("KEY", machine_key(model)))
    check, calls = counted(False)
    assert choose("auto", model, check=check, store=store).by == "check" and calls
    assert read_store(store)[machine_key(model)]["safe"] is False


def test_a_store_that_cannot_be_written_keeps_nothing_and_still_answers(tmp_path, model):
    blocker = tmp_path / "file"
    blocker.write_text("")
    check, calls = counted(True)
    assert choose("auto", model, check=check, store=blocker / "moot" / "store.json").use
    assert choose("auto", model, check=check, store=blocker / "moot" / "store.json").use and len(calls) == 2


def test_a_crash_with_extra_buffers_turns_them_off_on_this_machine(tmp_path, model):
    store = tmp_path / "store.json"
    check, _ = counted(True)
    assert choose("auto", model, check=check, store=store).use
    remember_crash(model, "the model's process died with SIGSEGV", store=store)
    later = choose("auto", model, check=never, store=store)
    assert (later.use, later.by) == (False, "cached") and "SIGSEGV" in later.why


CRASH = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"


@pytest.mark.parametrize("code, safe, said", [
    ("pass", True, "decoded"),
    ("import sys; sys.exit(3)", False, "exited with code 3"),
    (CRASH, False, "died with SIGSEGV"),
    ("raise SystemExit('no model')", False, "exited with code 1"),
])
def test_the_check_is_safe_only_when_the_child_ends_well(code, safe, said):
    finding = run_check("unused.gguf", command=[sys.executable, "-c", code])
    assert finding.safe is safe and said in finding.why and finding.seconds > 0


def test_a_check_that_hangs_is_stopped_and_says_no():
    finding = run_check("unused.gguf", timeout_s=0.5, command=[sys.executable, "-c", "import time; time.sleep(30)"])
    assert not finding.safe and "within 0.5s" in finding.why and finding.seconds < 5


def test_a_check_that_cannot_start_says_no():
    finding = run_check("unused.gguf", command=["/nonexistent/python"])
    assert not finding.safe and "could not start" in finding.why


def test_signals_and_codes_are_named():
    assert exit_cause(-int(signal.SIGSEGV)).startswith("died with SIGSEGV")
    assert exit_cause(-int(signal.SIGILL)).startswith("died with SIGILL")
    assert exit_cause(2) == "exited with code 2"


def test_the_cpu_is_named_by_its_model_and_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Intel Xeon\nflags\t\t: avx2 amx_tile fma\n\n"
                    "processor\t: 1\nmodel name\t: Intel Xeon\nflags\t\t: avx2 amx_tile fma\n")
    named = cpu_identity(info)
    assert named == "model name=Intel Xeon;flags=amx_tile avx2 fma"
    other = tmp_path / "other"
    other.write_text(info.read_text().replace("amx_tile ", ""))
    assert cpu_identity(other) != named


@pytest.mark.slow
def test_the_real_check_loads_the_model_in_a_child_and_this_process_goes_on(tmp_path):
    """Whatever this CPU answers (a crash included), the check returns a finding and its cost."""
    from moot.models.backends.local.client import default_model_path

    finding = run_check(default_model_path())
    assert isinstance(finding.safe, bool) and 0 < finding.seconds < 180
    store = tmp_path / "store.json"
    choice = choose("auto", default_model_path(), check=lambda path: finding, store=store)
    assert choice.use is finding.safe and json.loads(store.read_text())


@pytest.mark.parametrize("written, setting", [("off", "off"), ("on", "on"), ("auto", "auto"), ("'off'", "off"),
                                              ("false", "off")])
def test_the_setting_reads_as_written_though_yaml_takes_a_bare_on_for_true(make_scenario, written, setting):
    from moot.scenario.load import load_scenario

    path = make_scenario(extra=f"backends: {{local: {{extra_buffers: {written}}}}}\n")
    assert load_scenario(path).backends.local.extra_buffers == setting
