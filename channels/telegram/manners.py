"""Telegram manners: nothing the user sends goes unanswered, and nothing the user does to the
bot floods the log.

- An edited message gets a short reply (once per message): edits are not picked up.
- Stickers, locations, contacts, polls and the like get a short reply saying that they do not
  reach the agent (in groups only when they answer the bot).
- Queued input gets a reaction (👀) while it waits, or a short reply where reactions are off.
- A chat that refuses the bot (blocked, removed: 403) is one warning line, no traceback.
"""

from __future__ import annotations

import logging

from aiogram import Bot
from aiogram.enums import ContentType
from aiogram.exceptions import TelegramAPIError, TelegramForbiddenError
from aiogram.types import Message, ReactionTypeCustomEmoji, ReactionTypeEmoji, ReactionTypePaid

from gateway.store import DedupeWindow

from .addressing import Addressing
from .delivery import Target, send_chunk
from .render import Chunk

log = logging.getLogger("slashgate.telegram")

QUEUED_REACTION = "👀"
QUEUED = "Queued: this comes after the reply in progress."
EDITED = "Edits are not picked up: send the corrected message as a new one."
NOT_PASSED = "{what} do not reach the agent; it reads text (and files)."
# Content the agent never gets, worded for the reply (attachments are another module's).
OTHER = {
    ContentType.STICKER: "Stickers",
    ContentType.LOCATION: "Locations",
    ContentType.VENUE: "Venues",
    ContentType.CONTACT: "Contacts",
    ContentType.POLL: "Polls",
    ContentType.DICE: "Dice",
    ContentType.GAME: "Games",
    ContentType.STORY: "Stories",
}
EDITS_ANSWERED = 10_000  # (chat, message) pairs remembered, so an edit is answered once


def blocked(target: Target, exc: TelegramForbiddenError) -> None:
    log.warning("chat %s refuses the bot (%s); the reply is dropped", target.chat_id, exc.message)


async def queued_reaction(bot: Bot, target: Target, on: bool) -> bool:
    """Mark the queued message (or take the mark off); True when the reaction is there.

    Where reactions are refused, a queued message gets a short reply instead.
    """
    if target.reply_to is None:
        return False
    reaction: list[ReactionTypeEmoji | ReactionTypeCustomEmoji | ReactionTypePaid] = (
        [ReactionTypeEmoji(emoji=QUEUED_REACTION)] if on else []
    )
    try:
        await bot.set_message_reaction(
            chat_id=target.chat_id, message_id=target.reply_to, reaction=reaction
        )
        return on
    except TelegramForbiddenError as exc:
        blocked(target, exc)
    except TelegramAPIError as exc:
        log.info("no reaction in chat %s (%s)", target.chat_id, exc.message)
        if on:
            await _say(bot, target, QUEUED)
    return False


async def _say(bot: Bot, target: Target, text: str) -> None:
    try:
        await send_chunk(bot, target, Chunk(text, text), quote=True)
    except TelegramForbiddenError as exc:
        blocked(target, exc)
    except TelegramAPIError as exc:
        log.warning("could not answer in chat %s: %s", target.chat_id, exc.message)


class Manners:
    def __init__(self, bot: Bot, addressing: Addressing) -> None:
        self.bot = bot
        self.addressing = addressing
        self._edits = DedupeWindow(EDITS_ANSWERED, 24 * 3600)

    async def on_edited(self, message: Message) -> None:
        text = message.text if message.text is not None else message.caption
        if not self.addressing.from_a_person(message):
            return
        if message.chat.type != "private" and not (
            text is not None and self.addressing.addressed(message, text)
        ):
            return
        if self._edits.first(f"{message.chat.id}:{message.message_id}"):
            await _say(self.bot, Target.of(message), EDITED)

    async def on_other(self, message: Message) -> None:
        if not self.addressing.from_a_person(message):
            return
        # In groups only an answer to the bot (no text to address it otherwise).
        if message.chat.type != "private" and not self.addressing.addressed(message, ""):
            return
        what = OTHER.get(ContentType(message.content_type), "Such messages")
        await _say(self.bot, Target.of(message), NOT_PASSED.format(what=what))
