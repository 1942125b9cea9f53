"""Taking updates in: journaled once per update_id, processed in the background, a bounded
number at once.

The webhook hands each update to ``take``; long polling reaches it through aiogram's
dispatcher, as an outer middleware on updates that ends their way there. A message is
written to the gateway's journal, claiming its update_id, before Telegram is answered (the
webhook's 200, or polling's next offset); a redelivered update finds its id claimed and is
dropped, also after a restart. Other updates (button presses) only claim their id. Then the
channel's handler runs in a background task. Stopping lets the tasks finish for a grace
period, then cancels the rest and logs each one: it stays in the journal, and the next start
recovers it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from aiogram import BaseMiddleware
from aiogram.types import TelegramObject, Update

from gateway.api import Entry, GatewayAPI, StoreUnavailable
from gateway.tasks import BackgroundTasks

from .delivery import Target

log = logging.getLogger("slashgate.telegram")

Handler = Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]]
Process = Callable[[Update, Entry | None], Awaitable[None]]  # an update with its journal entry

UPDATES = ("message", "edited_message", "callback_query")  # the update types the bot handles
STORE_RETRY_CAP = 5.0  # seconds between tries of a store that is down, while polling


class Intake(BaseMiddleware):
    def __init__(
        self, gateway: GatewayAPI, channel: str, process: Process, max_in_flight: int = 256
    ) -> None:
        self._gateway = gateway
        self._channel = channel
        self._handle = process
        # The updates in flight; locked: full (the webhook answers 503, polling waits).
        self.slots = asyncio.Semaphore(max_in_flight)
        self._tasks = BackgroundTasks()
        self.last_update_id: int | None = None
        self.patient = False  # polling: wait for a store that is down (webhook: answer 503)
        self.stopping = False

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        """Long polling: aiogram's dispatcher hands each update here (and nowhere else)."""
        assert isinstance(event, Update)
        await self.take(event)
        return None

    async def take(self, update: Update, raw: str | None = None) -> None:
        """Journal ``update`` (``raw``: its JSON text, when at hand), then process it in the
        background. Raises StoreUnavailable when it could not be journaled.
        """
        entry = await self._journal(update, raw)
        if entry is None:
            log.info("update %d delivered again: ignored", update.update_id)
            return
        if self.last_update_id is None or update.update_id > self.last_update_id:
            self.last_update_id = update.update_id
        await self.slots.acquire()  # polling waits here; the webhook checked it first
        task = self._tasks.spawn(self._process(update, entry if isinstance(entry, Entry) else None))
        task.add_done_callback(partial(self._done, update.update_id))

    async def _journal(self, update: Update, raw: str | None) -> Entry | bool | None:
        """The update's journal entry (a message), True (claimed only), or None (seen before)."""
        delay = 0.1
        while True:
            try:
                return await self._write(update, raw)
            except StoreUnavailable as exc:
                if not self.patient or self.stopping:
                    raise
                log.warning("update %d waits for the store: %s", update.update_id, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, STORE_RETRY_CAP)

    async def _write(self, update: Update, raw: str | None) -> Entry | bool | None:
        claim = f"{self._channel}:update:{update.update_id}"
        if update.message is None:
            return await self._gateway.claim(self._channel, claim) or None
        # The update as JSON text, not as a dict: stores copy and encode an entry on every
        # write, and a string is one value where the dict is dozens.
        body = {"update": raw if raw is not None else update.model_dump_json(exclude_none=True)}
        conversation = Target.of(update.message).conversation
        return await self._gateway.accept(self._channel, conversation, body, claim)

    async def _process(self, update: Update, entry: Entry | None) -> None:
        try:
            await self._handle(update, entry)
        except Exception:
            log.exception("update %d failed", update.update_id)
        if entry is not None:  # not answered (not for the bot, or it failed): nothing to keep
            await self._gateway.done(entry)

    def _done(self, update_id: int, task: asyncio.Task[None]) -> None:
        self.slots.release()  # here, not in _process: a task cancelled unstarted frees it too
        if task.cancelled():
            log.warning(
                "update %d cancelled at shutdown; it runs again at the next start", update_id
            )

    async def drain(self) -> None:
        """Wait until every update taken in so far has been processed."""
        await self._tasks.join()

    async def close(self, grace: float) -> None:
        """Finish the updates in progress; past ``grace`` seconds, cancel what is left."""
        self.stopping = True
        await self._tasks.drain(grace)
