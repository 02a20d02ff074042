"""AutoGen's runtime traces and logs every message it routes, even when nothing records them.

autogen-core 0.7.5's SingleThreadedAgentRuntime opens an OpenTelemetry span for each delivery,
injects the trace context into each message's envelope, and serialises each message into span
attributes and into a MessageEvent for its `autogen_core.events` logger, whether or not a tracer or
a log handler takes them; autogen-agentchat opens a span for each agent created and each turn
taken. For the short group chats of per-item protocols that is a large part of moot's own cost
per model call (benchmarks/bench_overhead.py). Unless the user asks for AutoGen's traces
(MOOT_AUTOGEN_TRACING=1, for an OpenTelemetry setup of their own), spans and trace contexts are
skipped, and message events are built for the events logger only when it is enabled.
tests/test_engine_speed.py checks the patched names still exist, so an AutoGen upgrade that moves
them fails loudly instead of silently tracing again.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any, Mapping, Optional

from autogen_agentchat.agents import _base_chat_agent
from autogen_agentchat.teams._group_chat import _chat_agent_container
from autogen_core import EVENT_LOGGER_NAME, SingleThreadedAgentRuntime
from autogen_core import _single_threaded_agent_runtime as runtime_module
from autogen_core._telemetry._tracing import TraceHelper
from autogen_core.logging import MessageEvent

EVENTS = logging.getLogger(EVENT_LOGGER_NAME)
_serialize = SingleThreadedAgentRuntime._try_serialize
_message_event = MessageEvent


def _no_span(*args: Any, **kwargs: Any) -> contextlib.nullcontext[None]:
    return contextlib.nullcontext()


def _no_span_method(self: Any, *args: Any, **kwargs: Any) -> contextlib.nullcontext[None]:
    return contextlib.nullcontext()


def _no_trace_context() -> None:
    return None


async def _no_attributes(self: Any, *args: Any, **kwargs: Any) -> Mapping[str, str]:
    return {}


def _serialize_when_logged(self: Any, message: Any) -> str:
    return _serialize(self, message) if EVENTS.isEnabledFor(logging.INFO) else ""


def _message_event_when_logged(**fields: Any) -> Optional[Any]:
    return _message_event(**fields) if EVENTS.isEnabledFor(logging.INFO) else None


# (owner, name, replacement): methods of AutoGen's classes and names its modules imported
PATCHES = ((TraceHelper, "trace_block", _no_span_method),
           (SingleThreadedAgentRuntime, "_create_otel_attributes", _no_attributes),
           (SingleThreadedAgentRuntime, "_try_serialize", _serialize_when_logged),
           (runtime_module, "get_telemetry_envelope_metadata", _no_trace_context),
           (runtime_module, "MessageEvent", _message_event_when_logged),
           (_base_chat_agent, "trace_create_agent_span", _no_span),
           (_base_chat_agent, "trace_invoke_agent_span", _no_span),
           (_chat_agent_container, "trace_invoke_agent_span", _no_span))
PATCHED = tuple((owner, name) for owner, name, _ in PATCHES)


def quiet_runtime_telemetry() -> None:
    """Skip AutoGen's per-message spans and unlogged events unless MOOT_AUTOGEN_TRACING=1 (idempotent)."""
    if os.environ.get("MOOT_AUTOGEN_TRACING") == "1":
        return
    for owner, name, replacement in PATCHES:
        setattr(owner, name, replacement)
