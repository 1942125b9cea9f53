"""Taking updates in: once per update_id, processed in the background, a bounded number at once.

An aiogram outer middleware on updates, so the webhook and long polling share it: it drops a
redelivered update, then hands the rest of the pipeline to a task and returns at once (the
webhook answers 200 fast; polling fetches on). Every task is kept until it finishes, so that
stopping can wait for them: an update taken in is never dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiogram import BaseMiddleware
from aiogram.types import TelegramObject, Update

from gateway.store import DedupeWindow

log = logging.getLogger("slashgate.telegram")

Handler = Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]]


class Intake(BaseMiddleware):
    def __init__(self, max_in_flight: int = 256, dedupe: DedupeWindow | None = None) -> None:
        self._dedupe = dedupe or DedupeWindow()
        self._slots = asyncio.Semaphore(max_in_flight)
        self._tasks: set[asyncio.Task[None]] = set()
        self.last_update_id: int | None = None

    @property
    def full(self) -> bool:
        return self._slots.locked()

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        assert isinstance(event, Update)
        if self.last_update_id is None or event.update_id > self.last_update_id:
            self.last_update_id = event.update_id
        if not self._dedupe.first(str(event.update_id)):
            log.info("update %d delivered again: ignored", event.update_id)
            return None
        await self._slots.acquire()  # polling waits here; the webhook checked ``full`` first
        task = asyncio.create_task(self._process(handler, event, data))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return None

    async def _process(self, handler: Handler, update: Update, data: dict[str, Any]) -> None:
        try:
            await handler(update, data)
        except Exception:
            log.exception("update %d failed", update.update_id)
        finally:
            self._slots.release()

    async def drain(self) -> None:
        """Wait until every update taken in so far has been processed."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def close(self, grace: float) -> None:
        """Finish the updates in progress; past ``grace`` seconds, cancel what is left."""
        try:
            await asyncio.wait_for(self.drain(), grace)
        except TimeoutError:
            log.warning("%d updates still running at shutdown: cancelled", len(self._tasks))
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
