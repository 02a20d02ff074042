"""Re-scoring helpers a protocol's `rescore` calls (`moot score`): a role's recorded call, its exact
messages, and sending them again to the role's new model (moot.engine.rescore runs the rescoring)."""

from __future__ import annotations

from typing import Callable, Optional

from autogen_core.models import AssistantMessage, LLMMessage, SystemMessage, UserMessage
from pydantic import BaseModel

from moot.kit._context import Reply, UnitContext
from moot.log.events import Call
from moot.log.transcript import Transcript


def last_call(transcript: Transcript, role: str) -> Optional[Call]:
    """The role's last call as the run recorded it (before any rescoring was appended)."""
    found = [c for c in transcript.calls if c.role == role]
    return found[-1] if found else None


def recorded_messages(call: Call) -> list[LLMMessage]:
    """The exact messages a call sent, as AutoGen messages again."""
    out: list[LLMMessage] = []
    for m in call.messages:
        kind, content = m.get("type"), m.get("content", "")
        if kind == "SystemMessage":
            out.append(SystemMessage(content=content))
        elif kind == "AssistantMessage":
            out.append(AssistantMessage(content=content, source=m.get("source") or "assistant"))
        else:
            out.append(UserMessage(content=content, source=m.get("source") or "user"))
    return out


async def resend(ctx: UnitContext, call: Call, output: Optional[type[BaseModel]] = None,
                 decide: Optional[Callable[[str], Optional[str]]] = None) -> Reply:
    """Send a recorded call's messages to its role's model in `ctx` (the rescoring model)."""
    return await ctx.call(call.role, recorded_messages(call), output, stage=call.stage, decide=decide,
                          speaker=f"{call.role} (rescored)")
