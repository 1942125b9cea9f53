"""Slack on slack-bolt (async): events, slash commands and interactivity at ``/slack/events``
on the gateway's own aiohttp server, or over Socket Mode when an app token is set.

Every listener acknowledges at once and schedules the work (``listeners``); over HTTP a plain
slash command skips bolt's dispatch (``endpoint``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from aiohttp import ClientSession, ClientTimeout, web

from gateway import logs
from gateway.api import Channel, Entry, GatewayAPI, InboundMessage, ReplySink
from gateway.openapi import document

from .auth import Authorization
from .docs import operations
from .endpoint import EventsEndpoint
from .files import SlackFiles
from .inputs import SlackInputs
from .listeners import bolt_app
from .manifest import EVENTS_PATH
from .metering import count_retries, counted
from .outbox import Outbox
from .pacing import SlackPacing
from .settings import SlackSettings
from .web import client_log, web_client

if TYPE_CHECKING:
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler


log = logging.getLogger("slashgate.slack")


class SlackChannel(Channel[SlackSettings]):
    name = "slack"
    signed = True  # its routes check the platform's signature or secret header

    def __init__(
        self, gateway: GatewayAPI, settings: SlackSettings, *, update_interval: float = 1.5
    ) -> None:
        super().__init__(gateway, settings)
        if settings.slack_bot_token is None or settings.slack_signing_secret is None:
            raise ValueError("the Slack channel needs slack_bot_token and slack_signing_secret")
        token = settings.slack_bot_token.get_secret_value()
        secret = settings.slack_signing_secret.get_secret_value()
        # slack_sdk formats its dump of each call when its logger allows DEBUG, written or not.
        client_log.setLevel(logs.library_level(settings))
        self.pacing = SlackPacing(settings, gateway.store)
        self.outbox = Outbox(
            web_client(settings.slack_api_base, token, pacing=self.pacing),
            web_client(settings.slack_api_base, token, persistent=False, pacing=self.pacing),
            update_interval,
        )
        self.files = SlackFiles(settings, token)
        count_retries(self.outbox.client, gateway.metrics)
        self._umbrella = "/" + settings.slack_umbrella_command.lower().lstrip("/")
        self._auth = Authorization(self.outbox.client, token)
        self._inputs = SlackInputs(
            gateway,
            self.name,
            self.outbox,
            self.files,
            self._umbrella,
            settings.show_reasoning != "off",
        )
        self.app = bolt_app(self._inputs, settings.slack_api_base, secret, self._auth)
        self.endpoint = EventsEndpoint(
            self.app, self._inputs, secret, settings.webhook_max_body, self._auth.ok
        )
        self._socket: AsyncSocketModeHandler | None = None
        self._connecting: asyncio.Task[None] | None = None

    def mount(self, app: web.Application) -> None:
        app.router.add_post(EVENTS_PATH, self.endpoint.handle)
        document(app, *operations(EVENTS_PATH))

    async def readiness(self) -> str | None:
        if self._inputs.stopping:
            return "stopping"
        if self._socket is not None and not await self._socket.client.is_connected():
            return "Socket Mode is not connected"
        try:
            await self._auth.result()  # answered from memory once it succeeded
        except Exception as exc:
            return f"auth.test failed: {exc}"
        return None

    async def check(self) -> str:
        found = await self.outbox.client.auth_test()
        detail = f"team {found.get('team')}, bot user {found.get('user_id')}"
        app_token = self.settings.slack_app_token
        if app_token is not None:
            apps = web_client(self.settings.slack_api_base, None)
            await apps.apps_connections_open(app_token=app_token.get_secret_value())
            detail += ", Socket Mode app token accepted"
        return detail

    async def start(self) -> None:
        self.outbox.session = ClientSession(
            timeout=ClientTimeout(total=self.settings.platform_timeout),
            middlewares=(counted(self.gateway.metrics, self.outbox.client.base_url),),
        )
        self.outbox.client.session = self.outbox.previews.session = self.outbox.session
        self._inputs.spawn(self._auth.warm_up())
        await self.pacing.prepare()
        app_token = self.settings.slack_app_token
        if app_token is not None:
            from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

            self._socket = AsyncSocketModeHandler(
                self.app, app_token.get_secret_value(), web_client=self.outbox.client
            )
            # Connecting retries until Slack answers: never hold the gateway's start on it.
            self._connecting = asyncio.ensure_future(self._socket.connect_async())

    async def stop(self) -> None:
        # First of all: from now on Slack is told to come back later, and nothing new starts.
        self._inputs.stopping = True
        if self._connecting is not None:
            self._connecting.cancel()
            await asyncio.wait({self._connecting})
        if self._socket is not None:
            await self._socket.close_async()
        await self.drain(self.settings.cancel_grace)
        if self.outbox.session is not None:  # only now: the inputs drained above post with it
            await self.outbox.session.close()
        await self.pacing.aclose()

    async def drain(self, grace: float) -> None:
        """Let the inputs in flight finish for at most ``grace`` seconds, then cancel the rest
        (each cancelled input still tells its user, once).
        """
        await self._inputs.drain(grace)

    def describe(self) -> str:
        mode = "Socket Mode" if self.settings.slack_app_token else f"HTTP POST {EVENTS_PATH}"
        return f"slack ({mode}; umbrella command {self._umbrella})"

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, ReplySink] | None:
        return await self._inputs.recovered(entry)
