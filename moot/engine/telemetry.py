"""AutoGen's runtime traces and logs every message it routes, even when nothing records them.

autogen-core 0.7.5's SingleThreadedAgentRuntime opens an OpenTelemetry span for each delivery and
serialises each message into span attributes and into events for its `autogen_core.events`
logger, whether or not a tracer or a log handler takes them; for the short group chats of
per-item protocols that is a fifth of moot's own cost per model call
(benchmarks/bench_overhead.py). Unless the user asks for AutoGen's traces (MOOT_AUTOGEN_TRACING=1,
for an OpenTelemetry setup of their own), spans are skipped, and messages are serialised for the
events logger only when it is enabled. tests/test_engine_speed.py checks the patched names still
exist, so an AutoGen upgrade that moves them fails loudly instead of silently tracing again.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any, Mapping

from autogen_core import EVENT_LOGGER_NAME, SingleThreadedAgentRuntime
from autogen_core._telemetry._tracing import TraceHelper

PATCHED = ((TraceHelper, "trace_block"), (SingleThreadedAgentRuntime, "_create_otel_attributes"),
           (SingleThreadedAgentRuntime, "_try_serialize"))
EVENTS = logging.getLogger(EVENT_LOGGER_NAME)
_serialize = SingleThreadedAgentRuntime._try_serialize


def _no_span(self: Any, *args: Any, **kwargs: Any) -> contextlib.nullcontext[None]:
    return contextlib.nullcontext()


async def _no_attributes(self: Any, *args: Any, **kwargs: Any) -> Mapping[str, str]:
    return {}


def _serialize_when_logged(self: Any, message: Any) -> str:
    return _serialize(self, message) if EVENTS.isEnabledFor(logging.INFO) else ""


def quiet_runtime_telemetry() -> None:
    """Skip AutoGen's per-message spans unless MOOT_AUTOGEN_TRACING=1 (idempotent)."""
    if os.environ.get("MOOT_AUTOGEN_TRACING") == "1":
        return
    TraceHelper.trace_block = _no_span  # type: ignore[method-assign, assignment]  # a no-op span, not a Span
    SingleThreadedAgentRuntime._create_otel_attributes = _no_attributes  # type: ignore[method-assign]
    SingleThreadedAgentRuntime._try_serialize = _serialize_when_logged  # type: ignore[method-assign]
