"""Taking a room's events in, in the order sync gives them: a message for the bot is
journaled (its event id the claim, so an event synced again is dropped, also after a restart)
before the sync position moves past it, then answered in the background, a bounded number at
once. A reaction or a number that answers a permission prompt is claimed only. Stopping lets
the answers finish for a grace period, then cancels the rest: they stay in the journal, and
the next start recovers them.
"""

from __future__ import annotations

import asyncio
import json
import logging
from functools import partial
from typing import Any

from gateway.api import Entry, GatewayAPI
from gateway.tasks import BackgroundTasks

from .events import content_of, is_input, text_of
from .messages import Messages

log = logging.getLogger("slashgate.matrix")


class Intake:
    def __init__(
        self, gateway: GatewayAPI, channel: str, messages: Messages, max_in_flight: int = 256
    ) -> None:
        self.gateway = gateway
        self.channel = channel
        self.messages = messages
        self._slots = asyncio.Semaphore(max_in_flight)
        self._tasks = BackgroundTasks()

    async def take(self, room_id: str, event: dict[str, Any]) -> None:
        """One timeline event of a joined room. Returns once it is journaled (or claimed,
        or known not to be for the bot); raises StoreUnavailable when it could not be.
        """
        event_id = event.get("event_id")
        sender = event.get("sender")
        if not isinstance(event_id, str) or not isinstance(sender, str):
            return
        if sender == self.messages.me:
            return
        claim = f"{self.channel}:event:{event_id}"
        if event.get("type") == "m.reaction":
            if self.messages.permissions.pending(room_id, sender):
                if await self.gateway.claim(self.channel, claim):
                    await self._spawn(self.messages.reaction(room_id, event), event_id)
            return
        if event.get("type") == "m.room.encrypted":
            if self.messages.undecryptable(room_id) and await self.gateway.claim(
                self.channel, claim
            ):
                await self._spawn(self.messages.cannot_decrypt(room_id, event), event_id)
            return
        if not is_input(event):
            return
        content = content_of(event)
        if self.messages.answers_permission(room_id, sender, text_of(content)):
            if await self.gateway.claim(self.channel, claim):
                await self._spawn(self.messages.permission_answer(room_id, event), event_id)
            return
        conversation = await self.messages.conversation_for(room_id, event)
        if conversation is None:
            return  # not for the bot
        body = {"room": room_id, "event": json.dumps(event, separators=(",", ":"))}
        entry = await self.gateway.accept(self.channel, conversation, body, claim)
        if entry is None:
            log.info("event %s synced again: ignored", event_id)
            return
        await self._spawn(self._answer(room_id, event, entry), event_id)

    async def _spawn(self, work: Any, event_id: str) -> None:
        await self._slots.acquire()
        task = self._tasks.spawn(work)
        task.add_done_callback(partial(self._done, event_id))

    async def _answer(self, room_id: str, event: dict[str, Any], entry: Entry) -> None:
        try:
            await self.messages.answer(room_id, event, entry)
        except Exception:
            log.exception("event %s failed", event.get("event_id"))
        await self.gateway.done(entry)

    def _done(self, event_id: str, task: asyncio.Task[None]) -> None:
        self._slots.release()  # here: a task cancelled unstarted frees its slot too
        if task.cancelled():
            log.warning("event %s cancelled at shutdown; it runs again at the next start", event_id)
        elif task.exception() is not None:
            log.error("event %s failed", event_id, exc_info=task.exception())

    async def drain(self) -> None:
        await self._tasks.join()

    async def close(self, grace: float) -> None:
        """Finish the answers in progress; past ``grace`` seconds, cancel what is left."""
        await self._tasks.drain(grace)
