"""Streaming a blocking generator (llama.cpp generating in a worker thread) into asyncio.

The worker hands each item to the event loop with `loop.call_soon_threadsafe` (asyncio.Queue is
not thread-safe). Closing or cancelling the consumer sets a `threading.Event` that the producer
checks before every next token (a llama.cpp stopping criterion), so the worker ends within one
token and frees the model; the consumer's `finally` waits for it without blocking the loop.
Measured on the embedded model: first chunk after 0.7 s, a 50 ms asyncio heartbeat kept ticking
(44 of 45) during generation, and a cancelled consumer ended 7 ms after `cancel()` with the
worker gone and the model usable again (issue 11 FINDINGS §7).
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import aclosing, closing
from typing import AsyncGenerator, Callable, Generator, Optional, TypeVar, Union, cast

from autogen_core.models import CreateResult

T = TypeVar("T")
_END = object()


class Watcher:
    """Where a reply's text goes for someone who only watches it (a run's live side file,
    moot.engine.live): a model streams to it only when it streams in-process anyway (the embedded
    and the scripted model, `in_process = True`); a server is never asked to stream for it."""

    def __init__(self, write: Callable[[str], None]):
        self.write = write

    def __call__(self, text: str) -> None:
        self.write(text)


async def stream_in_thread(produce: Callable[[threading.Event], Generator[T, None, None]],
                           cancelled: threading.Event | None = None) -> AsyncGenerator[T, None]:
    """Yield what `produce(cancelled)` yields, running it in a worker thread."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()
    cancelled = cancelled or threading.Event()

    def put(item: object) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody listens any more
            pass

    def worker() -> None:
        try:
            with closing(produce(cancelled)) as items:  # closed here, in this thread: its locks freed
                for item in items:
                    put(item)
                    if cancelled.is_set():
                        break
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            put(exc)
        finally:
            put(_END)

    thread = threading.Thread(target=worker, name="moot-llama-stream", daemon=True)
    thread.start()
    try:
        while (item := await queue.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield cast(T, item)  # neither marker: what `produce` yielded
    finally:
        cancelled.set()
        await loop.run_in_executor(None, thread.join)


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
