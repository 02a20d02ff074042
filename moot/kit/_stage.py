"""Stage agents: AutoGen chat agents whose reply comes from a protocol callback.

Per-item protocols (COLA, ...) decide exactly what each agent is shown, so a StageAgent does
not prompt from the group-chat thread by itself: its `respond` callback receives the thread
and builds the prompt from the parts the paper gives that role (a COLA debater ignores the
other debaters; the judger reads their arguments from the thread). Speaker order comes from a
pure selection function, and SelectorGroupChat's LLM fallback is disabled. A run's stages share
pooled group chats (GroupChats), reached through the unit's context (`ctx.group_chat`).
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Iterable, Optional, Sequence, TypeVar

from autogen_agentchat.conditions import FunctionalTermination
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_agentchat.base import ChatAgent, Team
from autogen_agentchat.teams import SelectorGroupChat
from autogen_core import CancellationToken, SingleThreadedAgentRuntime
from autogen_ext.models.replay import ReplayChatCompletionClient

from moot.kit._telemetry import quiet_runtime_telemetry
from moot.kit._thread import ThreadAgent
from moot.tracing import detached

quiet_runtime_telemetry()  # group chats here need no per-message spans (moot/kit/_telemetry.py)

USER = "user"
Respond = Callable[[Sequence[BaseChatMessage]], Awaitable[str]]
T = TypeVar("T")
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


class _Team:
    """One SelectorGroupChat of stage agents with fixed names, rebound to each stage's callbacks."""

    def __init__(self, names: Sequence[str], max_turns: int, runtime: SingleThreadedAgentRuntime):
        self.agents = [StageAgent(name, _unbound) for name in names]
        self.select: Select = lambda said: None
        self.seen: list[object] = []
        participants: list[ChatAgent | Team] = list(self.agents)
        self.chat = SelectorGroupChat(participants, model_client=ReplayChatCompletionClient([]),
                                      selector_func=self._selector, allow_repeated_speaker=True, runtime=runtime,
                                      termination_condition=FunctionalTermination(self._over), max_turns=max_turns)

    def _selector(self, thread: Sequence[object]) -> str:
        speaker = self.select(spoken_of(thread))
        if speaker is None:
            raise RuntimeError("the stage is over but the group chat asked for a speaker")
        return speaker

    def _over(self, messages: Sequence[object]) -> bool:
        done = bool(messages) and isinstance(messages[-1], BaseChatMessage) and messages[-1].source != USER \
            and self.select(spoken_of(self.seen + list(messages))) is None
        self.seen.extend(messages)
        return done

    async def run(self, agents: Sequence[StageAgent], select: Select, task: str,
                  cancellation_token: Optional[CancellationToken]) -> list[BaseChatMessage]:
        by_name = {a.name: a for a in agents}
        for pooled in self.agents:
            pooled.respond, pooled.failure = by_name[pooled.name].respond, None
        self.select, self.seen = select, []
        try:
            result = await self.chat.run(task=TextMessage(content=task, source=USER),
                                         cancellation_token=cancellation_token)
        finally:
            for pooled in self.agents:
                by_name[pooled.name].failure = pooled.failure
        return [m for m in result.messages if isinstance(m, BaseChatMessage) and m.source != USER]


async def _unbound(thread: Sequence[BaseChatMessage]) -> str:
    raise RuntimeError("a pooled stage agent spoke outside a stage")


class GroupChats:
    """The group chats of a run's stages: AutoGen SelectorGroupChats on one shared runtime, kept
    in a pool per cast (agent names and turn cap) and reused from item to item.

    A fresh SelectorGroupChat per item starts and stops a runtime and registers every agent
    again: more than a model call costs moot (benchmarks/bench_overhead.py). Reused teams are
    reset between stages; a team whose stage failed or was cancelled is dropped, not reused.
    A runtime holds at most TEAMS_PER_RUNTIME teams: AutoGen checks every new subscription
    against all the others, so one runtime for every team grows quadratically."""

    TEAMS_PER_RUNTIME = 8

    def __init__(self) -> None:
        self._runtimes: list[SingleThreadedAgentRuntime] = []
        self._teams: list[int] = []  # teams on each runtime
        self._idle: dict[tuple[tuple[str, ...], int], list[_Team]] = {}

    async def run(self, agents: Sequence[StageAgent], select: Select, task: str, max_turns: int,
                  cancellation_token: Optional[CancellationToken] = None) -> list[BaseChatMessage]:
        """Run `agents` in the order `select` gives; the agents' messages in order."""
        if select([]) is None:
            return []
        if len(agents) < 2:  # a group chat needs two members; a lone agent just takes its turns
            return await _alone(agents, select, task)
        key = (tuple(a.name for a in agents), max_turns)
        idle = self._idle.setdefault(key, [])
        team = idle.pop() if idle else _Team(key[0], max_turns, self._started())
        try:
            said = await team.run(agents, select, task, cancellation_token)
        except BaseException:
            failed = next((a.failure for a in agents if a.failure is not None), None)
            if failed is not None:
                raise failed from None
            raise
        failed = next((a.failure for a in agents if a.failure is not None), None)
        if failed is not None:
            raise failed
        await team.chat.reset()
        idle.append(team)
        return said

    def _started(self) -> SingleThreadedAgentRuntime:
        """A started runtime with room for one more team."""
        if not self._runtimes or self._teams[-1] >= self.TEAMS_PER_RUNTIME:
            runtime = SingleThreadedAgentRuntime()
            with detached():  # shared by later units: no unit's span is its spans' parent (moot.tracing)
                runtime.start()
            self._runtimes.append(runtime)
            self._teams.append(0)
        self._teams[-1] += 1
        return self._runtimes[-1]

    async def close(self) -> None:
        for runtime in self._runtimes:
            await runtime.stop()
        self._runtimes.clear()
        self._teams.clear()
        self._idle.clear()


async def _alone(agents: Sequence[StageAgent], select: Select, task: str) -> list[BaseChatMessage]:
    by_name = {a.name: a for a in agents}
    thread: list[BaseChatMessage] = [TextMessage(content=task, source=USER)]
    while (speaker := select(spoken_of(thread))) is not None:
        thread.append(TextMessage(content=await by_name[speaker].respond(list(thread)), source=speaker))
    return thread[1:]
