"""What the channel does with a room message once sync brought it: whether it is for the bot
(a direct room, a mention), its conversation (the room, or its thread), the input it makes
(the bot's leading mention taken off, its files fetched) and the sink that answers it; a
reaction or a number that answers a permission prompt; a journaled message after a restart.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any

from mautrix.errors import MatrixError

from gateway.api import Entry, GatewayAPI, InboundMessage
from gateway.attachments import AttachmentError
from gateway.store import BoundedTTLMap

from .addressing import Addressing
from .crypto import Untrusted
from .events import (
    content_of,
    is_input,
    mentioned,
    relation,
    replying_to,
    text_of,
    thread_of,
)
from .files import MatrixFiles
from .outbox import Outbox, Target
from .permissions import Permissions
from .render import render
from .rooms import Rooms
from .sink import MatrixSink

log = logging.getLogger("slashgate.matrix")

# A message the bot could not decrypt (its room key never reached the bot's device): said,
# not ignored, once per Megolm session (its other messages fail alike).
UNDECRYPTABLE = (
    "🔒 I could not decrypt this message: its key did not reach my device. Please send it "
    "again; if this keeps happening, start a new direct message with me."
)
# A message read, but from a device its owner has not cross-signed (matrix_trust is
# cross_signed): not run. That device gets no room key, so its owner reads this on another.
UNTRUSTED = (
    "🔒 I did not act on this message: it came from a session its owner has not verified "
    "(cross-signed), and I take messages only from verified sessions. Verify that session "
    "from another of yours, then send it again."
)
MAX_ROOMS = 10_000
TELL_AGAIN_AFTER = 24 * 3600.0  # seconds: a session is told of once a day at most


class Messages:
    def __init__(
        self,
        gateway: GatewayAPI,
        channel: str,
        outbox: Outbox,
        permissions: Permissions,
        addressing: Addressing,
        rooms: Rooms,
        files: MatrixFiles,
    ) -> None:
        self.gateway = gateway
        self.channel = channel
        self.outbox = outbox
        self.permissions = permissions
        self.addressing = addressing
        self.rooms = rooms
        self.files = files
        self._told: BoundedTTLMap[bool] = BoundedTTLMap(MAX_ROOMS, TELL_AGAIN_AFTER)

    @property
    def me(self) -> str:
        return self.addressing.user_id

    # -- what sync brings -------------------------------------------------------------------

    async def conversation_for(self, room_id: str, event: dict[str, Any]) -> str | None:
        """The conversation of a message for the bot; None when it is not for the bot."""
        content = content_of(event)
        if not await self.rooms.direct(room_id):
            if not self.addressing.addressed(content, text_of(content), self.rooms.name(room_id)):
                return None
        return Target(room_id, thread=thread_of(content)).conversation

    async def prompt_of(self, room_id: str, event: dict[str, Any]) -> tuple[int, str] | None:
        """The number a message is and the prompt it answers; None when it is no number, or
        no answer: in a room of several people, a number said to someone else (a reply to
        another message, or mentioning others and not the bot) is a message like others.
        """
        user = str(event["sender"])
        content = content_of(event)
        number = self.permissions.number(text_of(content))
        if number is None or not self.permissions.pending(room_id, user):
            return None
        users = mentioned(content)
        aside = (
            self.me not in users
            and (replying_to(content) is not None or bool(users))
            and not await self.rooms.direct(room_id)
        )
        prompt = self.permissions.answered(room_id, user, replying_to(content), aside)
        return None if prompt is None else (number, prompt)

    async def cannot_decrypt(self, room_id: str, event: dict[str, Any], error: Exception) -> None:
        """The notice of a message the bot cannot read (or may not run: ``Untrusted``), the
        first of its sender in the room for a while: by sender, not by Megolm session, which
        the sender names (one notice each of a flood of made-up sessions).
        """
        content = content_of(event)
        told = f"{room_id}|{event.get('sender')}"
        if self._told.get(told) is not None:
            return
        self._told.set(told, True)
        target = Target(room_id, str(event["event_id"]), thread_of(content))
        try:
            text = UNTRUSTED if isinstance(error, Untrusted) else UNDECRYPTABLE
            await self.outbox.notice(room_id, render(text)[0], target.relation())
        except (MatrixError, OSError) as exc:
            log.warning("the decryption notice in %s was not sent: %s", room_id, exc)

    async def reaction(self, room_id: str, event: dict[str, Any]) -> None:
        related = relation(content_of(event))
        prompt, key = related.get("event_id"), related.get("key")
        if related.get("rel_type") == "m.annotation" and isinstance(prompt, str):
            await self.permissions.reacted(room_id, str(event["sender"]), prompt, str(key))

    async def permission_answer(
        self, room_id: str, event: dict[str, Any], answering: tuple[int, str]
    ) -> None:
        """The number a message is, to the prompt it answers (``prompt_of``)."""
        said = Target(room_id, str(event["event_id"]), thread_of(content_of(event)))
        await self.permissions.numbered(str(event["sender"]), *answering, said)

    async def answer(self, room_id: str, event: dict[str, Any], entry: Entry | None) -> None:
        """Run a journaled message through the gateway, its reply to the room."""
        received = await self.received(room_id, event)
        if received is None:
            return
        inbound, sink = received
        try:
            refs = self.files.refs(content_of(event))
            if refs and await self.gateway.access.lets_talk(inbound):  # not a stranger's
                try:
                    inbound = replace(inbound, attachments=await self.files.fetch(refs))
                except AttachmentError as exc:  # one reply; nothing goes to the runtime
                    await sink.final(self.gateway.failure_reply("invalid", None, str(exc)))
                    return
            outcome = await self.gateway.handle(inbound, sink, entry)
            if outcome.reply is None:  # withdrawn (deleted or edited while queued): its ⏳ goes
                await sink.unqueue()
        finally:  # also when cancelled at shutdown, or the core failed before its final
            await sink.aclose()

    async def received(
        self, room_id: str, event: dict[str, Any]
    ) -> tuple[InboundMessage, MatrixSink] | None:
        """The input (without its files' bytes) and its sink; None when it is not for the
        bot after all (or says nothing).
        """
        if not is_input(event) or event.get("sender") == self.me:
            return None
        content = content_of(event)
        direct = await self.rooms.direct(room_id)
        text = text_of(content)
        shown = self.rooms.name(room_id)
        if not direct and not self.addressing.addressed(content, text, shown):
            return None
        text = self.addressing.strip_mention(content, text, shown)
        if not text.strip() and not self.files.refs(content):
            return None
        sender = str(event["sender"])
        target = Target(room_id, str(event["event_id"]), thread_of(content))
        inbound = InboundMessage(
            channel=self.channel,
            conversation=target.conversation,
            user=sender,
            text=text,
            message_id=target.event_id,
            bot_username=self.addressing.localpart,
            meta={"room": room_id},
            direct=direct,
            groups=(room_id,),
        )
        sink = MatrixSink(self.outbox, self.permissions, target, sender, self.files.settings)
        return inbound, sink

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, MatrixSink] | None:
        """A journaled message again, its files fetched again."""
        try:
            room_id = str(entry.body["room"])
            event = json.loads(entry.body["event"])
        except (KeyError, TypeError, ValueError):
            return None
        if not isinstance(event, dict):
            return None
        received = await self.received(room_id, event)
        if received is None:
            return None
        inbound, sink = received
        if inbound.message_id is not None:  # a ⏳ it may have had before the restart
            sink.was_queued(await self.outbox.annotations(room_id, inbound.message_id))
        refs = self.files.refs(content_of(event))
        try:
            return replace(inbound, attachments=await self.files.fetch(refs)), sink
        except AttachmentError as exc:
            log.warning("a journaled Matrix message cannot run again: %s", exc)
            await sink.aclose()
            return None
