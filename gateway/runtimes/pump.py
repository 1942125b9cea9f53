"""The turn pump of the runtimes that talk to an agent process (ACP, pi): a driver sends the
turn and waits for its end while the agent's own messages come in; both put events on one queue,
and the turn's stream yields from it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable

from ..events import RuntimeEvent

EventQueue = asyncio.Queue[RuntimeEvent | None]


async def pump(
    queue: EventQueue,
    drive: Callable[[], Awaitable[None]],
    stop: Callable[[], Awaitable[None]],
) -> AsyncGenerator[RuntimeEvent, None]:
    """Yield what ``drive`` and the agent's listeners put on ``queue`` until ``drive`` returns
    (it queues the turn's last event itself). If the reader leaves first (its deadline,
    shutdown), the turn is still going in the agent: ``drive`` is cancelled and awaited, then
    ``stop`` tells the agent, or its next turn would find it still busy.

    Iterate it under ``contextlib.aclosing``: left by an ``async for``, it is closed only once
    collected, later and in a task of its own, so ``stop`` could come after the next turn.
    """

    async def driver() -> None:
        try:
            await drive()
        finally:
            queue.put_nowait(None)

    task = asyncio.ensure_future(driver())
    try:
        while (event := await queue.get()) is not None:
            yield event
        await task  # done with its None; this raises what it may have raised
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
            await stop()
