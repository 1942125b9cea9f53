"""Background tasks that are kept referenced while they run and awaited when they stop."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


class BackgroundTasks:
    """A set of tasks: ``spawn`` keeps a reference until each ends; ``aclose`` cancels the
    ones still running and waits for them, so none outlives its owner.
    """

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        if name is not None:
            task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def __len__(self) -> int:
        return len(self._tasks)

    async def join(self) -> None:
        """Wait until no task is running, counting those spawned meanwhile."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def drain(self, grace: float) -> None:
        """Let the running tasks finish for at most ``grace`` seconds, then cancel the rest."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=grace)
        await self.aclose()

    async def aclose(self) -> None:
        tasks = set(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
