"""A plain message's replies as messages in its Discord channel, for the same sink as an
interaction's (``DiscordSink``): what an interaction calls its original response is the first
reply posted (created by the first edit), and follow-ups are further messages. The first
message the bot posts for an input replies to it (without pinging its author).

A channel message cannot be ephemeral: what an interaction shows only to its user (a
rejection, a gateway command's answer) is posted in the channel.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import hikari
from hikari.api.special_endpoints import ComponentBuilder

from .messages import Messages, why
from .target import Target

log = logging.getLogger("slashgate.discord")

_NONE: Sequence[ComponentBuilder] = ()


class ChannelMessages(Messages):
    def __init__(self, rest: hikari.api.RESTClient, target: Target, message: int) -> None:
        super().__init__(rest, target)
        self.channel = int(target.conversation)
        self.message = message  # the user's message the replies answer
        self.reply: int | None = None  # the reply edited in place, once posted
        self._answered = False  # something was posted in answer to the message

    async def edit(
        self, content: str, components: Sequence[ComponentBuilder] | None = None
    ) -> bool:
        if self.reply is None:
            self.reply = await self.follow_up(content, False, components or _NONE)
            return self.reply is not None
        try:
            await self.rest.edit_message(
                self.channel,
                self.reply,
                content,
                components=components if components is not None else hikari.UNDEFINED,
                mentions_everyone=False,
                user_mentions=False,
                role_mentions=False,
            )
        except hikari.HikariError as exc:
            log.warning("editing a Discord reply failed: %s", why(exc))
            return False
        return True

    async def delete(self) -> bool:
        if self.reply is None:  # nothing shown yet: nothing to take back
            return True
        deleted = await self.delete_follow_up(self.reply)
        if deleted:
            self.reply = None
        return deleted

    async def follow_up(
        self,
        content: str,
        ephemeral: bool,
        components: Sequence[ComponentBuilder] = _NONE,
    ) -> int | None:
        try:
            message = await self.rest.create_message(
                self.channel,
                content,
                components=components or hikari.UNDEFINED,
                reply=self.message if not self._answered else hikari.UNDEFINED,
                reply_must_exist=False,
                mentions_reply=False,
                mentions_everyone=False,
                user_mentions=False,
                role_mentions=False,
            )
        except hikari.HikariError as exc:
            log.warning("posting a Discord reply failed: %s", why(exc))
            return None
        self._answered = True
        return int(message.id)

    async def edit_follow_up(self, message: int, content: str) -> bool:
        try:
            await self.rest.edit_message(
                self.channel,
                message,
                content,
                mentions_everyone=False,
                user_mentions=False,
                role_mentions=False,
            )
        except hikari.HikariError as exc:
            log.warning("editing a Discord reply failed: %s", why(exc))
            return False
        return True

    async def delete_follow_up(self, message: int) -> bool:
        try:
            await self.rest.delete_message(self.channel, message)
        except hikari.HikariError as exc:
            log.warning("deleting a Discord reply failed: %s", why(exc))
            return False
        return True
