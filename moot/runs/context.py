"""What a protocol sees while it runs one unit: its input, its models, and the unit's event log.

`await ctx.call(role, messages, output)` asks the role's model through the run's ModelEngine
(cache, concurrency bound, retries) and records a `call` event (exactly what was sent and what
came back) and the `message` it contributes, in one append. A conference records its own turn
events around the call (`record=False`, then `ctx.record(...)`).

A unit that was cut short and runs again continues its log: its recorded calls are served back
from the log (not sent, not recorded twice) as the protocol asks them again, so the log stays
append-only with no event repeated, and no finished call is sent twice even without a cache.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from autogen_core import CancellationToken
from autogen_core.models import LLMMessage
from pydantic import BaseModel

from moot.events import Call, EventBase, Message, Usage
from moot.models.cache import cache_key, message_data
from moot.models.calls import ModelCallError
from moot.models.engine import ModelEngine, RoleModel
from moot.transcript import EventLog, Transcript

Listener = Callable[[list[EventBase]], None]


@dataclass(frozen=True)
class Unit:
    """One thing a run does: a conference (with its variant), or one item of a protocol."""

    id: str
    scenario: Any
    inputs: Mapping[str, Any] = field(default_factory=dict)
    gold: Optional[str] = None
    variant: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """A model's reply as a protocol sees it; `call` is its event (recorded unless record=False)."""

    text: str
    cached: bool
    call: Call
    replayed: bool = False  # served from this unit's own log (a continued unit)


class UnitContext:
    """One unit's access to its models and its log (see the module docstring)."""

    def __init__(self, unit: Unit, engine: ModelEngine, models: Mapping[str, RoleModel], log: EventLog,
                 prior: Optional[Transcript] = None, listener: Optional[Listener] = None):
        self.unit, self.engine, self.models, self.log = unit, engine, models, log
        self.prior = prior
        self.listener = listener
        self.cancellation = CancellationToken()
        self.events: list[EventBase] = list(prior.events) if prior else []
        self._replay: dict[str, list[Call]] = defaultdict(list)
        for call in (prior.calls if prior else []):
            self._replay[call.key].append(call)
        self._turn = max((m.turn for m in (prior.messages if prior else [])), default=0)

    @property
    def inputs(self) -> Mapping[str, Any]:
        return self.unit.inputs

    def model(self, role: str) -> RoleModel:
        return self.models[role]

    def record(self, *events: EventBase) -> None:
        """Append events to the unit's log in one write, then show them."""
        self.log.append(*events)
        self.events.extend(events)
        if self.listener is not None:
            self.listener(list(events))

    async def call(self, role: str, messages: Sequence[LLMMessage], output: Optional[type[BaseModel]] = None, *,
                   stage: str = "", round: int = 1, decide: Optional[Callable[[str], Optional[str]]] = None,
                   record: bool = True, speaker: Optional[str] = None) -> Reply:
        """The reply of `role`'s model. Recorded as a `call` and a `message` (speaker, stage,
        round, the reply, `decide(reply)` as its decision) unless `record` is False."""
        model = self.models[role]
        key = cache_key(model.spec, model.settings, messages, output)
        if self._replay.get(key):
            call = self._replay[key].pop(0)
            return Reply(call.reply, call.cached, call, replayed=True)
        started = time.monotonic()
        asking = asyncio.ensure_future(self.engine.ask(model, messages, output, role=role, key=key,
                                                       cancellation_token=self.cancellation))
        self.cancellation.link_future(asking)  # a stopped run does not wait for a reply
        try:
            result = await asking
        except ModelCallError as exc:
            exc.role = role  # type: ignore[attr-defined]  # the runner records who failed
            raise
        call = Call(role=role, stage=stage, model=model.spec, messages=[message_data(m) for m in messages],
                    output=output.__name__ if output is not None else None, reply=result.text,
                    usage=Usage(prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens),
                    latency_s=round_s(result.latency_s if not result.cached else time.monotonic() - started),
                    attempts=result.attempts, cached=result.cached, finish_reason=result.finish_reason, key=key)
        if record:
            self._turn += 1
            message = Message(turn=self._turn, speaker=speaker or role, role=role, action=stage or role,
                              round=round, content=result.text, model=model.spec, usage=call.usage,
                              latency_s=call.latency_s, calls=max(call.attempts, 1),
                              decision=decide(result.text) if decide else None)
            self.record(call, message)
        return Reply(result.text, result.cached, call)


def round_s(seconds: float) -> float:
    return round(seconds, 4)
