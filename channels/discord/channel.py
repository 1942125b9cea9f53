"""Discord on hikari: application commands over HTTP at ``POST /discord/interactions`` on
the gateway's own aiohttp server; replies, follow-ups and the command list through hikari's
REST client (``discord_api_base``).

Plain messages (DMs, mentions) come over Discord's Gateway connection when ``discord_gateway``
is on (listener.py), and are answered as channel messages.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import aiohttp
import hikari

from gateway.api import Channel, Entry, GatewayAPI, InboundMessage, ReplySink
from gateway.openapi import document

from .autocomplete import Completer
from .bot import rest_bot
from .docs import operations
from .endpoint import PATH, InteractionsEndpoint
from .files import DiscordFiles
from .inputs import DiscordInputs
from .listener import Listener, gateway_bot
from .messages import why
from .metering import metered_rest, metered_session
from .permissions import Permissions
from .plain_inputs import PlainInputs
from .settings import DiscordSettings
from .signature import Verifier
from .sync import CommandSync

if TYPE_CHECKING:
    from aiohttp import web

    from contract import Command

log = logging.getLogger("slashgate.discord")


class DiscordChannel(Channel):
    name = "discord"
    signed = True  # its routes check the platform's signature or secret header

    def __init__(self, gateway: GatewayAPI, settings: DiscordSettings) -> None:
        super().__init__(gateway, settings)
        self.bot = rest_bot(settings)
        rest = self.bot.rest
        assert isinstance(rest, hikari.impl.RESTClientImpl)  # what RESTBot makes
        # Started and closed here (RESTBot.start would open its own server); at start, the
        # channel's own client takes its place: each call counted (metering.py).
        self.rest = rest
        self.api: aiohttp.ClientSession | None = None  # the metered client's session
        assert settings.discord_public_key is not None  # rest_bot checked it
        self.sync = CommandSync(
            self.bot.rest, settings.discord_umbrella_command, settings.discord_guild_ids
        )
        self.sync.update(gateway.host_commands())
        self.permissions = Permissions(gateway, self.name)
        self.inputs = DiscordInputs(
            gateway,
            self.name,
            self.bot.rest,
            DiscordFiles(settings),
            self.permissions,
            self.sync.scopes.seen,
            settings.discord_edit_interval,
        )
        completer = Completer(gateway, self.name, self.sync.scopes.seen, settings.interactive_only)
        self.endpoint = InteractionsEndpoint(
            Verifier(settings.discord_public_key),
            self.bot.entity_factory,
            self.inputs,
            self.permissions,
            completer,
            settings.webhook_max_body,
        )
        self.plain = PlainInputs(gateway, self.name, self.inputs)
        self.listener = (
            Listener(gateway_bot(settings), self.plain) if settings.discord_gateway else None
        )
        self._settings = settings

    def mount(self, app: web.Application) -> None:
        app.router.add_post(PATH, self.endpoint.handle)
        document(app, *operations(PATH))

    async def start(self) -> None:
        self.api = metered_session(self._settings, self.gateway.metrics)
        self.rest = metered_rest(self.bot, self._settings, self.api)
        self.sync.rest = self.inputs.rest = self.rest
        self.rest.start()
        self.inputs.session = aiohttp.ClientSession()
        self.gateway.subscribe(self.inventory_changed)
        self.gateway.subscribe_conversation(self.conversation_changed)
        menu = self.gateway.menu()
        if menu is not None:
            self.sync.update(menu)
        if self._settings.discord_sync_commands:
            self.inputs.spawn(self._publish())
        if self.listener is not None:
            self.listener.start()

    def inventory_changed(self, inventory: tuple[Command, ...]) -> None:
        self.sync.update(inventory)
        if self._settings.discord_sync_commands and not self.inputs.stopping:
            self.inputs.spawn(self._publish())

    def conversation_changed(self, key: str, inventory: tuple[Command, ...]) -> None:
        """A conversation's commands: its guild's own list where they differ (guilds.py)."""
        channel, _, conversation = key.partition(":")
        if channel != self.name or not self.sync.conversation_changed(conversation, inventory):
            return
        if self._settings.discord_sync_commands and not self.inputs.stopping:
            self.inputs.spawn(self._publish(self.sync.publish_guilds))

    async def _publish(self, publish: Callable[[], Awaitable[int]] | None = None) -> None:
        try:
            await (publish or self.sync.publish)()
        except hikari.HikariError as exc:  # the commands Discord has stay as they were
            log.warning("publishing the Discord commands failed: %s", why(exc))
        except Exception:  # an answer hikari could not read: the same, with its traceback
            log.exception("publishing the Discord commands failed")

    async def stop(self) -> None:
        if self.listener is not None:  # no new message while the inputs drain
            await self.listener.stop()
        self.inputs.stopping = True  # from now on Discord is told to come back later
        await self.inputs.drain(self._settings.cancel_grace)
        if self.inputs.session is not None:
            await self.inputs.session.close()
        await self.rest.close()
        if self.api is not None:
            await self.api.close()

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, ReplySink] | None:
        if "message" in entry.body:  # a plain message (plain.py), not an interaction
            return await self.plain.recovered(entry)
        return await self.inputs.recovered(entry)

    async def readiness(self) -> str | None:
        if self.inputs.stopping:
            return "stopping"
        if self.listener is not None and not self.listener.connected:
            return "the Discord Gateway connection is not up"
        return None

    async def check(self) -> str:
        self.rest.start()
        try:
            application = await self.rest.fetch_application()
        finally:
            await self.rest.close()
        return f"application {application.name} (id {application.id})"

    def describe(self) -> str:
        umbrella = self._settings.discord_umbrella_command
        plain = "; DMs and mentions over the Gateway" if self.listener is not None else ""
        return f"discord (HTTP POST {PATH}; umbrella command /{umbrella}{plain})"
