"""Taking a room's events in, in the order sync gives them: a message for the bot is
journaled (its event id the claim, so an event synced again is dropped, also after a restart)
before the sync position moves past it, then answered in the background, a bounded number at
once. A reaction or a number that answers a permission prompt is claimed only. The sender's
redaction of a message that still waits for its turn withdraws it; their edit of one
withdraws it and runs the edited text in its place (``_edited``). Stopping lets
the answers finish for a grace period, then cancels the rest: they stay in the journal, and
the next start recovers them.

An encrypted event is decrypted first. One whose room key has not come waits for it in the
background (it is journaled once it can be read: a restart meanwhile loses it); one that
cannot be read, or that came from a device below ``matrix_trust``, gets a notice that says so
(``Messages.cannot_decrypt``) and is not run.
"""

from __future__ import annotations

import asyncio
import json
import logging
from functools import partial
from typing import Any

from mautrix.errors import DecryptionError, SessionNotFound

from gateway.api import Entry, GatewayAPI
from gateway.tasks import BackgroundTasks

from .crypto import Crypto
from .events import edit_of, is_input, redacted, replacement
from .messages import Messages
from .outbox import Target

log = logging.getLogger("slashgate.matrix")

KEY_WAIT = 10.0  # seconds a message without its room key waits for it


class Intake:
    def __init__(
        self,
        gateway: GatewayAPI,
        channel: str,
        messages: Messages,
        crypto: Crypto,
        max_in_flight: int = 256,
    ) -> None:
        self.gateway = gateway
        self.channel = channel
        self.messages = messages
        self.crypto = crypto
        self.key_wait = KEY_WAIT
        self._slots = asyncio.Semaphore(max_in_flight)
        # Messages waiting for their room key: apart, as one taken once its key came needs
        # a slot of the others.
        self._waits = asyncio.Semaphore(max_in_flight)
        self._tasks = BackgroundTasks()
        # The answer of each message being answered, by its event id: an edit of one that
        # still waits replaces it (``_edited``).
        self._answering: dict[str, asyncio.Task[None]] = {}

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
        if event.get("type") == "m.room.encrypted":
            try:
                event = await self.crypto.decrypt(room_id, event)
            except DecryptionError as exc:
                # Its key may be on its way: waited for apart, the sync goes on meanwhile.
                if self._waits.locked():  # a flood of them: the sync must not wait on it
                    log.warning(
                        "event %s in %s dropped: too many waiting for keys", event_id, room_id
                    )
                elif await self.gateway.claim(self.channel, f"{self.channel}:sealed:{event_id}"):
                    await self._spawn(self._sealed(room_id, event, exc), event_id, self._waits)
                return
        claim = f"{self.channel}:event:{event_id}"
        target = redacted(event)
        if target is not None:  # the person deleted a message: if it still waits, it goes
            self.gateway.withdraw(self.channel, target, sender)
            return
        edit = edit_of(event)
        if edit is not None:
            await self._edited(room_id, event, claim, *edit)
            return
        if event.get("type") == "m.reaction":
            if self.messages.permissions.pending(room_id, sender):
                if await self.gateway.claim(self.channel, claim):
                    await self._spawn(self.messages.reaction(room_id, event), event_id)
            return
        if not is_input(event):
            return
        answering = await self.messages.prompt_of(room_id, event)
        if answering is not None:  # a number that answers its sender's pending prompt
            if await self.gateway.claim(self.channel, claim):
                answer = self.messages.permission_answer(room_id, event, answering)
                await self._spawn(answer, event_id)
            return
        conversation = await self.messages.conversation_for(room_id, event)
        if conversation is None:
            return  # not for the bot
        body = {"room": room_id, "event": json.dumps(event, separators=(",", ":"))}
        entry = await self.gateway.accept(self.channel, conversation, body, claim)
        if entry is None:
            log.info("event %s synced again: ignored", event_id)
            return
        await self._answering_of(event_id, self._answer(room_id, event, entry), event_id)

    async def _edited(
        self, room_id: str, edit: dict[str, Any], claim: str, original: str, new: dict[str, Any]
    ) -> None:
        """An edit of a message that still waits for its turn: the message is withdrawn and
        the edit runs in its place, at the back of the queue, once the message's answer is
        done with (its ⏳ off). An edit of any other message changes nothing.
        """
        answering = self._answering.get(original)  # it may end while the store is awaited
        if answering is None or not await self.gateway.claim(self.channel, claim):
            return  # not being answered here; or an edit synced again
        sender = str(edit["sender"])
        conversation = self.gateway.withdraw(self.channel, original, sender)
        if conversation is None:  # running or answered already, or not the sender's
            return
        event = replacement(edit, original, new, Target.of(conversation).thread)
        body = {"room": room_id, "event": json.dumps(event, separators=(",", ":"))}
        entry = await self.gateway.accept(self.channel, conversation, body)
        assert entry is not None  # no claim: never a redelivery
        answer = self._answer(room_id, event, entry, answering)
        await self._answering_of(original, answer, str(edit["event_id"]))

    async def _answering_of(self, message: str, answer: Any, event_id: str) -> None:
        """``answer`` is what answers ``message`` (its id) now, until it ends."""
        task = await self._spawn(answer, event_id)
        self._answering[message] = task
        task.add_done_callback(partial(self._answered, message))

    def _answered(self, message: str, task: asyncio.Task[None]) -> None:
        if self._answering.get(message) is task:
            del self._answering[message]

    async def _sealed(self, room_id: str, event: dict[str, Any], error: DecryptionError) -> None:
        """A message the bot could not decrypt (or may not run: ``Untrusted``): without its
        room key, the key is asked of the sender's device and waited for (then the message
        is taken as any other); else, or when it does not come, one notice says so (once per
        Megolm session).
        """
        if isinstance(error, SessionNotFound) and await self.crypto.request_key(
            room_id, event, self.key_wait
        ):
            try:
                opened = await self.crypto.decrypt(room_id, event)
            except DecryptionError as exc:
                error = exc
            else:
                await self.take(room_id, opened)
                return
        log.warning("event %s in %s is not taken: %s", event.get("event_id"), room_id, error)
        await self.messages.cannot_decrypt(room_id, event, error)

    async def _spawn(
        self, work: Any, event_id: str, slots: asyncio.Semaphore | None = None
    ) -> asyncio.Task[None]:
        slots = slots or self._slots
        await slots.acquire()
        task = self._tasks.spawn(work)
        task.add_done_callback(partial(self._done, event_id, slots))
        return task

    async def _answer(
        self,
        room_id: str,
        event: dict[str, Any],
        entry: Entry,
        replaced: asyncio.Task[None] | None = None,
    ) -> None:
        if replaced is not None:  # the answer of the message an edit replaces ends first
            await asyncio.wait({replaced})
        try:
            await self.messages.answer(room_id, event, entry)
        except Exception:
            log.exception("event %s failed", event.get("event_id"))
        await self.gateway.done(entry)

    def _done(self, event_id: str, slots: asyncio.Semaphore, task: asyncio.Task[None]) -> None:
        slots.release()  # here: a task cancelled unstarted frees its slot too
        if task.cancelled():
            log.warning("event %s cancelled at shutdown; it runs again at the next start", event_id)
        elif task.exception() is not None:
            log.error("event %s failed", event_id, exc_info=task.exception())

    def left(self, room_id: str) -> None:
        """The bot is out of ``room_id`` (kicked, banned, gone): the turns running there (its
        threads' too) stop, as no one there would see their answers; in the background, as
        a stop may wait for the runtime (the sync goes on meanwhile).
        """
        self._tasks.spawn(self._stop_turns(room_id))

    async def _stop_turns(self, room_id: str) -> None:
        within = f"{room_id}|"
        stopped = await self.gateway.stop_turns(
            self.channel, lambda c: c == room_id or c.startswith(within)
        )
        if stopped:
            log.info("left %s: %d running turn(s) stopped", room_id, stopped)

    async def drain(self) -> None:
        await self._tasks.join()

    async def close(self, grace: float) -> None:
        """Finish the answers in progress; past ``grace`` seconds, cancel what is left."""
        await self._tasks.drain(grace)
