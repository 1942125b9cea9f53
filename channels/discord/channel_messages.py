"""A plain message's replies as messages in its Discord channel, for the same sink as an
interaction's (``DiscordSink``): what an interaction calls its original response is the first
reply posted (created by the first edit), and follow-ups are further messages. The first
message the bot posts for an input replies to it (without pinging its author).

A channel message cannot be ephemeral: what an interaction shows only to its user (a
rejection, a gateway command's answer) is posted in the channel.
"""

from __future__ import annotations

from collections.abc import Sequence

import hikari
from hikari.api.special_endpoints import ComponentBuilder

from .messages import QUIET, Components, Messages, done, posted
from .target import Target


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
            self.reply = await self._post(content, False, components or hikari.UNDEFINED)
            return self.reply is not None
        return await self._edit(self.reply, content, components)

    async def delete(self) -> bool:
        if self.reply is None:  # nothing shown yet: nothing to take back
            return True
        deleted = await self.delete_follow_up(self.reply)
        if deleted:
            self.reply = None
        return deleted

    async def _post(self, content: str, ephemeral: bool, components: Components) -> int | None:
        message = self.rest.create_message(
            self.channel,
            content,
            components=components,
            reply=self.message if not self._answered else hikari.UNDEFINED,
            reply_must_exist=False,
            mentions_reply=False,
            **QUIET,
        )
        number = await posted(message, "posting a Discord reply")
        if number is not None:
            self._answered = True
        return number

    async def edit_follow_up(self, message: int, content: str) -> bool:
        return await self._edit(message, content, None)

    async def delete_follow_up(self, message: int) -> bool:
        deleted = self.rest.delete_message(self.channel, message)
        return await done(deleted, "deleting a Discord reply")

    async def _edit(
        self, message: int, content: str, components: Sequence[ComponentBuilder] | None
    ) -> bool:
        edited = self.rest.edit_message(
            self.channel,
            message,
            content,
            components=components if components is not None else hikari.UNDEFINED,
            **QUIET,
        )
        return await done(edited, "editing a Discord reply")
