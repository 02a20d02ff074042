"""The embedded model's own process (moot.models.backends.local.process): a crash in it fails the calls
waiting on it with one line (the model, the signal, what it last said, the setting that avoids
it), never the process that asked; a crash with extra buffers under `auto` turns them off for the
machine; the choice is recorded on every call; and a run whose model died continues when the same
command runs again."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from autogen_core.models import UserMessage
from backend_support import read_events, write_scenario

from moot.models.backends.local.extra_buffers import Choice, choose, read_store, store_path
from moot.models.backends.local.process import LocalConfig, ModelCrashed, ModelProcess
from moot.models.requests import REQUEST_ARG, Choose

# A stand-in for the model's process that says it is loaded, reads one request and dies as told.
FAKE = """
import json, os, signal, sys
print(json.dumps({"ready": {"chat_template": False}}), flush=True)
sys.stdin.readline()
sys.stderr.write("loading done\\nggml-cpu.c:1234: GGML_ASSERT(tile != NULL) failed\\nbacktrace follows\\n")
sys.stderr.flush()
os.kill(os.getpid(), signal.%s)
"""


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """The user's cache folder, here: the extra-buffer answers go there."""
    monkeypatch.setenv("MOOT_CACHE_DIR", str(tmp_path / "cache"))
    return store_path()


def fake_model(tmp_path: Path) -> str:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    return str(path)


def crashed(config: LocalConfig, choice: Choice, how: str) -> ModelCrashed:
    process = ModelProcess(config, choice, command=[sys.executable, "-c", FAKE % how])

    async def ask() -> None:
        _, replies = process.submit({"messages": []})
        raise await replies.get()

    with pytest.raises(ModelCrashed) as raised:
        asyncio.run(ask())
    with pytest.raises(ModelCrashed):  # and every later call, at once
        asyncio.run(ask())
    return raised.value


def test_a_native_crash_with_extra_buffers_under_auto_is_one_line_and_turns_them_off(tmp_path, cache):
    path = fake_model(tmp_path)
    error = crashed(LocalConfig(path, extra_buffers="auto"), Choice(True, "check"), "SIGSEGV")
    assert "\n" not in error.cause and error.resumes
    assert error.cause.startswith("the embedded model (model.gguf, llama.cpp in process ")
    assert "died with SIGSEGV (Segmentation fault): ggml-cpu.c:1234: GGML_ASSERT(tile != NULL) failed" in error.cause
    assert "extra buffer types" in error.cause and "now loads without them" in error.cause
    later = choose("auto", path, check=lambda p: pytest.fail("checked again"))
    assert (later.use, later.by) == (False, "cached")


def test_a_crash_with_extra_buffers_forced_on_names_the_setting_and_keeps_nothing(tmp_path, cache):
    error = crashed(LocalConfig(fake_model(tmp_path), extra_buffers="on"), Choice(True, "setting"), "SIGILL")
    assert "died with SIGILL" in error.cause and "backends.local.extra_buffers: on" in error.cause
    assert "set it to off or auto" in error.cause and not cache.exists()


@pytest.mark.parametrize("choice, how", [(Choice(False, "check"), "SIGSEGV"), (Choice(True, "check"), "SIGKILL")])
def test_a_crash_without_extra_buffers_or_a_kill_from_outside_blames_nothing(tmp_path, cache, choice, how):
    error = crashed(LocalConfig(fake_model(tmp_path), extra_buffers="auto"), choice, how)
    assert f"died with {how}" in error.cause and "extra buffer" not in error.cause
    assert not cache.exists()


def test_a_process_that_dies_while_loading_says_so(tmp_path, cache):
    code = "import sys; sys.stderr.write('error loading model: not a GGUF file\\n'); sys.exit(1)"
    process = ModelProcess(LocalConfig(fake_model(tmp_path)), Choice(False, "check"), command=[sys.executable, "-c", code])
    with pytest.raises(ModelCrashed) as raised:
        process.ready()
    assert "exited with code 1 while loading: error loading model: not a GGUF file" in raised.value.cause


# ---------------------------------------------------------------- the real model

def ask_choice(client):
    async def go():
        return await client.create([UserMessage(content="Is the sky blue? Answer:", source="user")],
                                   extra_create_args={REQUEST_ARG: Choose(document=True, options=("Yes", "No")).as_dict()})
    return asyncio.run(go())


@pytest.mark.slow
@pytest.mark.parametrize("setting", ["off", "on", "auto"])
def test_every_call_records_the_extra_buffer_choice(setting):
    from moot.models.backends.local.client import LocalChatCompletionClient, default_model_path

    path = default_model_path()
    safe = choose("auto", path).use  # this machine's answer
    client = LocalChatCompletionClient(LocalConfig(path, n_ctx=1024, n_threads=1, extra_buffers=setting),
                                       {"max_tokens": 8, "temperature": 0.0})
    try:
        result = ask_choice(client)
    except ModelCrashed as crash:  # only where the check found them unsafe: one line, and this process goes on
        assert setting == "on" and not safe and "backends.local.extra_buffers: on" in crash.cause
        return
    assert result.detail["extra_buffers"] is {"on": True, "off": False, "auto": safe}[setting]
    assert result.detail["threads"] == 1 and result.content in ("Yes", "No")


def worker_of(pid: int) -> int:
    """The pid of the model process `pid` started."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and b"moot.models.backends.local.worker" in command:
            return int(entry.name)
    raise LookupError("no model process")


def calls_in(path: Path) -> list[dict]:
    """The calls a transcript holds so far (none while its last line is still being written)."""
    try:
        return [e for e in read_events(path) if e["type"] == "call"]
    except (OSError, ValueError):
        return []


@pytest.mark.slow
def test_a_model_process_that_dies_mid_run_is_one_line_and_the_same_command_continues(tmp_path):
    scenario = write_scenario(tmp_path)
    out = tmp_path / "run"
    env = {**os.environ, "MOOT_CACHE_DIR": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "moot", "run", str(scenario), "--out", str(out)]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    transcript = out / "conference.jsonl"
    deadline = time.monotonic() + 120
    while len(calls_in(transcript)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(worker_of(run.pid), signal.SIGSEGV)  # as llama.cpp's own fault would
    _, err = run.communicate(timeout=60)
    lines = [line for line in err.splitlines() if line.strip()]
    assert run.returncode == 1, err
    assert len(lines) == 1 and lines[0].startswith("stopped early: error: the embedded model (gemma-3-270m"), err
    assert "died with SIGSEGV" in lines[0] and lines[0].endswith("(run the same command again to continue; "
                                                                  "finished work is kept)")
    before = calls_in(transcript)
    first = {c["detail"]["extra_buffers"] for c in before}
    blamed = "extra buffer types" in lines[0]
    assert len(first) == 1 and blamed is first.pop()  # blamed exactly when they were on (under auto)

    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr
    events = read_events(transcript)
    assert [e["type"] for e in events].count("run_resumed") == 1
    assert events[-1]["type"] == "run_finished" and events[-1]["status"] == "completed"
    resumed = calls_in(transcript)[len(before):]
    assert resumed
    if blamed:  # the machine's answer is now "off", and the run went on without them
        kept = read_store(tmp_path / "cache" / "extra-buffers.json")
        assert [v["safe"] for v in kept.values()] == [False]
        assert all(c["detail"]["extra_buffers"] is False for c in resumed)


def test_a_torn_or_unreadable_reply_fails_its_call_instead_of_hanging(tmp_path, cache):
    """A reply line cut short by a dying process is passed over (the end that follows fails the
    call); a result that is not one fails its call with why."""
    from moot.models.backends.local.process import WorkerError

    code = """
import json, sys
print(json.dumps({"ready": {}}), flush=True)
sys.stdin.readline()
print(json.dumps({"id": 1, "result": {"content": 5}}), flush=True)
sys.stdin.readline()
sys.stdout.write('{"id": 2, "text": "cut sh'); sys.stdout.flush()
"""
    process = ModelProcess(LocalConfig(fake_model(tmp_path)), Choice(False, "check"), command=[sys.executable, "-c", code])

    async def ask() -> BaseException:
        _, replies = process.submit({"messages": []})
        reply = await asyncio.wait_for(replies.get(), 30)
        assert isinstance(reply, BaseException)
        return reply

    assert isinstance(asyncio.run(ask()), WorkerError)
    assert isinstance(asyncio.run(ask()), ModelCrashed)
