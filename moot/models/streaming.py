"""Streaming a model's reply: who watches it, and its final result.

The embedded model sends its text as it is generated, through the pipe from its process
(moot.models.backends.local.process); the OpenAI-compatible client reads a server's events. Closing or
cancelling the consumer stops the generation (the embedded model's at its next token).
"""

from __future__ import annotations

from contextlib import aclosing
from typing import AsyncGenerator, Callable, Optional, Union

from autogen_core.models import CreateResult


class Watcher:
    """Where a reply's text goes for someone who only watches it (a run's live side file,
    moot.engine.live): a model streams to it only when its text comes as it is generated anyway (the
    embedded and the scripted model, `in_process = True`); a server is never asked to stream for it."""

    def __init__(self, write: Callable[[str], None]):
        self.write = write

    def __call__(self, text: str) -> None:
        self.write(text)


async def final_of(stream: AsyncGenerator[Union[str, CreateResult], None],
                   on_text: Optional[Callable[[str], None]] = None) -> CreateResult:
    """A client stream's final result (its last non-text item), its text chunks handed to
    `on_text` on the way; the stream is closed however this ends."""
    result: Optional[CreateResult] = None
    async with aclosing(stream) as items:
        async for item in items:
            if not isinstance(item, str):
                result = item
            elif on_text is not None:
                on_text(item)
    if result is None:
        raise RuntimeError("the model's stream ended without its result")
    return result
