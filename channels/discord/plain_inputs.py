"""What the Discord channel does with a plain message for the bot: journal it (its message id
is the claim: a dispatch replayed after a resume, or seen by another replica's connection,
runs once), then run it in the channel's background tasks with a sink that answers in the
message's channel, telling its user once when it fails or the channel stops first.
"""

from __future__ import annotations

import logging

from gateway.api import Entry, GatewayAPI, InboundMessage, ReplySink, StoreUnavailable
from gateway.attachments import AttachmentError

from .channel_messages import ChannelMessages
from .endpoint import UNAVAILABLE
from .inputs import DiscordInputs
from .plain import Said
from .sink import DiscordSink
from .target import Target

log = logging.getLogger("slashgate.discord")


class PlainInputs:
    def __init__(self, gateway: GatewayAPI, name: str, inputs: DiscordInputs) -> None:
        self.gateway = gateway
        self.name = name
        self.inputs = inputs  # the REST client, files, permissions and tasks of the channel

    async def accept(self, said: Said) -> bool:
        """Journal the message and run it in the background; False for a replay, or when the
        store is down (the user is told: Discord does not deliver a message again).
        """
        self._seen(said)
        claim = f"{self.name}:message:{said.message_id}"
        try:
            entry = await self.gateway.accept(self.name, said.conversation, said.body(), claim)
        except StoreUnavailable as exc:
            log.warning("a Discord message was not taken: %s", exc)
            await self._messages(said).follow_up(UNAVAILABLE, False)
            return False
        if entry is None:
            return False
        self.inputs.spawn(self._handle(said, entry))
        return True

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, ReplySink] | None:
        said = Said.of(entry.body)
        self._seen(said)
        try:
            return await self.inputs.message(said), self._sink(said)
        except AttachmentError as exc:
            log.warning("a journaled Discord message cannot run again: %s", exc)
            return None

    def _messages(self, said: Said) -> ChannelMessages:
        # No interaction: no application or token; ChannelMessages posts in the channel.
        target = Target(0, "", said.conversation, said.user, ephemeral=False)
        return ChannelMessages(self.inputs.rest, target, int(said.message_id))

    def _sink(self, said: Said) -> DiscordSink:
        return DiscordSink(
            self._messages(said),
            self.inputs.permissions,
            self.inputs.interval,
            self.gateway.settings.show_reasoning != "off",
        )

    async def _handle(self, said: Said, entry: Entry) -> None:
        sink = self._sink(said)
        try:  # the gateway answers once whatever fails, its files' fetch included
            await self.gateway.handle(self.inputs.given(said), sink, entry)
        finally:
            await sink.aclose()

    def _seen(self, said: Said) -> None:
        """Tell the command sync the channel's guild, as an interaction does: the guild's
        own command list follows a conversation that began with plain messages too.
        """
        self.inputs.commands(said.conversation, int(said.guild) if said.guild else None)
