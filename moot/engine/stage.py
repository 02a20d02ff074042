"""Stage agents, and a stage's turns taken among them in the order of a pure selection function.

Per-item protocols (COLA, ...) decide exactly what each agent is shown, so a StageAgent does
not prompt from the group-chat thread by itself: its `respond` callback receives the thread
and builds the prompt from the parts the paper gives that role (a COLA debater ignores the
other debaters; the judger reads their arguments from the thread).

A stage is a group chat as AutoGen's SelectorGroupChat(selector_func=...) defines one: the task,
then turns of AutoGen chat agents in the order a pure function of the messages so far gives (None
ends it), each agent handed, through its `on_messages`, the messages it has not seen yet. It runs
in the unit's own task, without AutoGen's team runtime: for a stage of a few short turns that
runtime routes some forty messages through its queues and costs more than the stage's model calls
(benchmarks/bench_overhead.py). The conference, whose turns are long, stays a SelectorGroupChat.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Iterable, Optional, Sequence, TypeVar

from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_core import CancellationToken

from moot.engine.thread import ThreadAgent

USER = "user"
Respond = Callable[[Sequence[BaseChatMessage]], Awaitable[str]]
Select = Callable[[Sequence[BaseChatMessage]], Optional[str]]  # the agents' messages so far -> next
T = TypeVar("T")


class StageAgent(ThreadAgent):
    """An agent whose turn is `await respond(thread)`."""

    def __init__(self, name: str, respond: Respond, description: str = "stage agent"):
        super().__init__(name, description)
        self.respond = respond

    async def reply(self, cancellation_token: CancellationToken) -> TextMessage:
        return TextMessage(content=await self.respond(list(self._thread)), source=self.name)


def cancel_calls(calls: Iterable[asyncio.Future[T]]) -> None:
    """Stop a stage's model calls still running (a turn failed, or the stage is over). A call that
    already failed has its exception retrieved: its cause reached the caller through the turn that
    awaited it, or does not matter once the stage stopped."""
    for call in calls:
        if call.done() and not call.cancelled():
            call.exception()
        call.cancel()


def spoken_of(thread: Sequence[object]) -> list[BaseChatMessage]:
    """The agents' messages of a thread (the task message left out)."""
    return [m for m in thread if isinstance(m, BaseChatMessage) and m.source != USER]


async def run_stage(agents: Sequence[StageAgent], select: Select, task: str, max_turns: int,
                    cancellation_token: Optional[CancellationToken] = None) -> list[BaseChatMessage]:
    """`agents` take at most `max_turns` turns in the order `select` gives; their messages in order.
    A turn that fails raises its own error."""
    by_name = {a.name: a for a in agents}
    token = cancellation_token or CancellationToken()
    thread: list[BaseChatMessage] = [TextMessage(content=task, source=USER)]
    seen = dict.fromkeys(by_name, 0)  # how much of the thread each agent has been handed
    said: list[BaseChatMessage] = []
    while len(said) < max_turns and (speaker := select(said)) is not None:
        if speaker not in by_name:
            raise RuntimeError(f"the stage's selection named {speaker!r}, who is not in it")
        response = await by_name[speaker].on_messages(thread[seen[speaker]:], token)
        thread.append(response.chat_message)
        said.append(response.chat_message)
        seen[speaker] = len(thread)
    return said
