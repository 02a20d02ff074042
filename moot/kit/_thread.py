"""The AutoGen agent shape both conference roles and stage agents share.

Each keeps the group-chat thread it has seen and answers a turn with one TextMessage; only
how that reply is made differs, so subclasses implement `reply` alone.
"""

from __future__ import annotations

from typing import Optional, Sequence

from autogen_agentchat.agents import BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_core import CancellationToken


class ThreadAgent(BaseChatAgent):
    """Keeps the thread; `failure` holds a model failure so the caller can re-raise the real cause."""

    def __init__(self, name: str, description: str):
        super().__init__(name, description=description)
        self._thread: list[BaseChatMessage] = []
        self.failure: Optional[BaseException] = None

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    async def on_messages(self, messages: Sequence[BaseChatMessage],
                          cancellation_token: CancellationToken) -> Response:
        self._thread.extend(m for m in messages if isinstance(m, BaseChatMessage))
        reply = await self.reply(cancellation_token)
        self._thread.append(reply)
        return Response(chat_message=reply)

    async def reply(self, cancellation_token: CancellationToken) -> TextMessage:
        """This agent's message for the turn, given the thread so far (self._thread)."""
        raise NotImplementedError

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        self._thread.clear()
