"""What the engine does to stay cheap per call, checked so an upgrade cannot silently undo it.

The figures themselves come from benchmarks/ (timed unit tests would be flaky on a shared machine).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from moot.kit import _telemetry as telemetry
from moot.models.calls import within


def test_the_autogen_telemetry_names_moot_skips_still_exist():
    for owner, name in telemetry.PATCHED:
        assert callable(getattr(owner, name, None)), f"{owner.__name__}.{name} moved: update moot/kit/_telemetry.py"


def test_telemetry_is_skipped_unless_asked_for(monkeypatch):
    telemetry.quiet_runtime_telemetry()
    for owner, name, replacement in telemetry.PATCHES:
        assert getattr(owner, name) is replacement


def test_message_events_are_still_built_for_an_enabled_events_logger():
    telemetry.quiet_runtime_telemetry()
    fields = {"payload": "p", "sender": None, "receiver": None, "kind": "k", "delivery_stage": "s"}
    level = telemetry.EVENTS.level
    try:
        telemetry.EVENTS.setLevel(telemetry.logging.WARNING)
        assert telemetry._message_event_when_logged(**fields) is None  # nothing takes them: not built
        telemetry.EVENTS.setLevel(telemetry.logging.INFO)
        assert telemetry._message_event_when_logged(**fields).kwargs["payload"] == "p"
    finally:
        telemetry.EVENTS.setLevel(level)


def test_a_call_over_its_time_limit_is_a_timeout():
    async def slow():
        await asyncio.sleep(1)

    with pytest.raises(TimeoutError):
        asyncio.run(within(0.01, slow()))
    assert asyncio.run(within(1, asyncio.sleep(0, result=7))) == 7


def test_the_ollama_client_is_not_imported_for_other_backends():
    code = ("import sys, moot.cli.run, moot.protocols, moot.models.backends.openai.client; "
            "print(sorted(m for m in sys.modules if m.startswith(('ollama', 'autogen_ext.models.ollama'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
