"""Stage agents: AutoGen chat agents whose reply comes from a protocol callback.

Per-item protocols (COLA, ...) decide exactly what each agent is shown, so a StageAgent does
not prompt from the group-chat thread by itself: its `respond` callback receives the thread
and builds the prompt from the parts the paper gives that role (a COLA debater ignores the
other debaters; the judger reads their arguments from the thread). Speaker order comes from a
pure selection function, and SelectorGroupChat's LLM fallback is disabled.
"""

from __future__ import annotations

from typing import Awaitable, Callable, Optional, Sequence

from autogen_agentchat.conditions import FunctionalTermination, MaxMessageTermination
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_agentchat.teams import SelectorGroupChat
from autogen_core import CancellationToken
from autogen_ext.models.replay import ReplayChatCompletionClient

from moot.agents.telemetry import quiet_runtime_telemetry
from moot.agents.thread import ThreadAgent

quiet_runtime_telemetry()  # group chats here need no per-message spans (agents/telemetry.py)

USER = "user"
Respond = Callable[[Sequence[BaseChatMessage]], Awaitable[str]]
Select = Callable[[Sequence[BaseChatMessage]], Optional[str]]  # the agents' messages so far -> next


class StageAgent(ThreadAgent):
    """An agent whose turn is `await respond(thread)`; a failure is kept for the caller."""

    def __init__(self, name: str, respond: Respond, description: str = "stage agent"):
        super().__init__(name, description)
        self.respond = respond

    async def reply(self, cancellation_token: CancellationToken) -> TextMessage:
        try:
            text = await self.respond(list(self._thread))
        except Exception as exc:  # noqa: BLE001 - kept so the caller re-raises the real cause
            self.failure = exc
            raise
        return TextMessage(content=text, source=self.name)


def spoken_of(thread: Sequence[object]) -> list[BaseChatMessage]:
    """The agents' messages of a thread (the task message left out)."""
    return [m for m in thread if isinstance(m, BaseChatMessage) and m.source != USER]


async def run_group_chat(agents: Sequence[StageAgent], select: Select, task: str,
                         max_turns: int) -> list[BaseChatMessage]:
    """Run agents as a SelectorGroupChat ordered by `select`; the agents' messages in order."""

    def selector(thread: Sequence[object]) -> str:
        speaker = select(spoken_of(thread))
        if speaker is None:
            raise RuntimeError("the stage is over but the group chat asked for a speaker")
        return speaker

    def over(messages: Sequence[object]) -> bool:
        return bool(messages) and isinstance(messages[-1], BaseChatMessage) \
            and messages[-1].source != USER and select(spoken_of(messages_seen + list(messages))) is None

    messages_seen: list[object] = []

    def track(messages: Sequence[object]) -> bool:
        done = over(messages)
        messages_seen.extend(messages)
        return done

    if select([]) is None:
        return []
    if len(agents) < 2:  # a group chat needs two members; a lone agent just takes its turns
        return await _alone(agents, select, task)
    team = SelectorGroupChat(list(agents), model_client=ReplayChatCompletionClient([]),
                             selector_func=selector, allow_repeated_speaker=True,
                             termination_condition=FunctionalTermination(track)
                             | MaxMessageTermination(max_turns + 1))
    try:
        result = await team.run(task=TextMessage(content=task, source=USER))
    except Exception:
        failed = next((a.failure for a in agents if a.failure is not None), None)
        if failed is not None:
            raise failed from None
        raise
    failed = next((a.failure for a in agents if a.failure is not None), None)
    if failed is not None:
        raise failed
    return [m for m in result.messages if isinstance(m, BaseChatMessage) and m.source != USER]


async def _alone(agents: Sequence[StageAgent], select: Select, task: str) -> list[BaseChatMessage]:
    by_name = {a.name: a for a in agents}
    thread: list[BaseChatMessage] = [TextMessage(content=task, source=USER)]
    while (speaker := select(spoken_of(thread))) is not None:
        thread.append(TextMessage(content=await by_name[speaker].respond(list(thread)), source=speaker))
    return thread[1:]
