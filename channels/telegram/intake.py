"""Taking updates in: once per update_id, processed in the background, a bounded number at once.

An aiogram outer middleware on updates, so the webhook and long polling share it: it drops a
redelivered update, then hands the rest of the pipeline to a background task and returns at
once (the webhook answers 200 fast; polling fetches on). Stopping lets the tasks finish for
a grace period, then cancels the rest and logs each one cancelled: its reply is lost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from aiogram import BaseMiddleware
from aiogram.types import TelegramObject, Update

from gateway.store import DedupeWindow
from gateway.tasks import BackgroundTasks

log = logging.getLogger("slashgate.telegram")

Handler = Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]]


class Intake(BaseMiddleware):
    def __init__(self, max_in_flight: int = 256, dedupe: DedupeWindow | None = None) -> None:
        self._dedupe = dedupe or DedupeWindow()
        self._slots = asyncio.Semaphore(max_in_flight)
        self._tasks = BackgroundTasks()
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
        task = self._tasks.spawn(self._process(handler, event, data))
        task.add_done_callback(partial(self._done, event.update_id))
        return None

    async def _process(self, handler: Handler, update: Update, data: dict[str, Any]) -> None:
        try:
            await handler(update, data)
        except Exception:
            log.exception("update %d failed", update.update_id)

    def _done(self, update_id: int, task: asyncio.Task[None]) -> None:
        self._slots.release()  # here, not in _process: a task cancelled unstarted frees it too
        if task.cancelled():
            log.warning("update %d cancelled at shutdown before it was answered", update_id)

    async def drain(self) -> None:
        """Wait until every update taken in so far has been processed."""
        await self._tasks.join()

    async def close(self, grace: float) -> None:
        """Finish the updates in progress; past ``grace`` seconds, cancel what is left."""
        await self._tasks.drain(grace)
