"""What the channel does with an update once the intake has taken it: a message for the bot
becomes an input of the gateway (its text normalized, its files fetched) with a sink that
renders for Telegram; other content and edits get the channel's manners; a button press
answers a permission prompt.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from aiogram.exceptions import AiogramError
from aiogram.types import CallbackQuery, Message, Update
from pydantic import ValidationError

from gateway.api import Entry, GatewayAPI, InboundMessage
from gateway.attachments import AttachmentError

from .addressing import Addressing
from .delivery import Target, describe
from .files import FileRef, TelegramFiles, file_refs
from .manners import OTHER, Manners
from .menus import Menus
from .outbox import Outbox
from .permissions import Permissions
from .sink import TelegramSink

log = logging.getLogger("slashgate.telegram")


class Updates:
    def __init__(
        self,
        gateway: GatewayAPI,
        channel: str,
        outbox: Outbox,
        addressing: Addressing,
        files: TelegramFiles,
        menus: Menus,
    ) -> None:
        self.gateway = gateway
        self.channel = channel
        self.outbox = outbox
        self.addressing = addressing
        self.files = files
        self.menus = menus
        self.manners = Manners(outbox.bot, addressing)

    async def route(self, update: Update, entry: Entry | None) -> None:
        """An update to its handler. Not aiogram's router: its layers of middlewares and
        filters cost more per message than the rest of the channel.
        """
        if update.message is not None:
            if update.message.content_type in OTHER:
                await self.manners.on_other(update.message)
            else:
                await self._on_message(update.message, entry)
        elif update.edited_message is not None:
            await self.manners.on_edited(update.edited_message)
        elif update.callback_query is not None:
            await self._on_callback(update.callback_query)

    async def _on_message(self, message: Message, entry: Entry | None) -> None:
        collected = await self.files.collect(message)  # an album is one message
        if collected is None:
            return
        message, files = collected
        received = self._received(message, files)
        if received is None:
            return
        inbound, sink = received
        try:
            if inbound.direct:  # an owner's private chat offers every command
                owner = await self.gateway.access.is_owner(self.channel, inbound.user)
                self.menus.sender(message.chat.id, owner)
            # With files, what fetches them: the gateway answers once whatever fails (a file
            # it cannot take is one "invalid" reply, and nothing goes to the runtime).
            given = self._with_files(inbound, files) if files else inbound
            await self.gateway.handle(given, sink, entry)
        finally:  # also when cancelled at shutdown, or the core failed before its final
            await sink.aclose()

    async def _with_files(self, inbound: InboundMessage, files: list[FileRef]) -> InboundMessage:
        """``inbound`` with its files' bytes where its sender may talk (a stranger's are not
        fetched); AttachmentError when they cannot be had.
        """
        if not await self.gateway.access.lets_talk(inbound):
            return inbound
        return replace(inbound, attachments=await self.files.fetch(files))

    def _received(
        self, message: Message, files: list[FileRef]
    ) -> tuple[InboundMessage, TelegramSink] | None:
        """The input (without its files' bytes yet) and its sink, or None when the message is
        not for the bot.
        """
        me = self.addressing.me
        text = message.text if message.text is not None else message.caption
        if (text is None and not files) or message.from_user is None or me is None:
            return None  # nothing to send (stickers, service messages) or not from a person
        text = text or ""
        if message.from_user.id == me.id:
            return None
        target = Target.of(message)
        if not target.private and not self.addressing.addressed(message, text):
            return None
        text = self.addressing.strip_mention(text)
        if not text.strip() and not files:
            return None
        text = self.menus.for_chat(message.chat.id).rewrite(text)
        inbound = InboundMessage(
            channel=self.channel,
            conversation=target.conversation,
            user=str(message.from_user.id),
            text=text,
            message_id=str(message.message_id),
            bot_username=me.username,
            meta={"chat_type": message.chat.type},
            direct=target.private,
            groups=(str(message.chat.id),),
        )
        return inbound, TelegramSink(self.outbox, target, message.from_user.id)

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, TelegramSink] | None:
        """A journaled message again, its files fetched again (an album's items each alone)."""
        bot = self.outbox.bot
        try:
            journaled = entry.body["update"]  # JSON text (a dict in entries of older versions)
            if isinstance(journaled, str):
                update = Update.model_validate_json(journaled, context={"bot": bot})
            else:
                update = Update.model_validate(journaled, context={"bot": bot})
        except (KeyError, ValidationError):
            return None
        if update.message is None:
            return None
        files = file_refs(update.message)
        received = self._received(update.message, files)
        if received is None:
            return None
        inbound, sink = received
        try:
            return replace(inbound, attachments=await self.files.fetch(files)), sink
        except AttachmentError as exc:
            log.warning("a journaled Telegram message cannot run again: %s", exc)
            await sink.aclose()
            return None

    async def _on_callback(self, query: CallbackQuery) -> None:
        try:
            if Permissions.handles(query):
                await self.outbox.permissions.answer(query)
            else:
                await self.outbox.bot.answer_callback_query(query.id)
        except AiogramError as exc:  # the choice reached the runtime; only its echo is lost
            log.warning("answering a button press failed: %s", describe(exc))
