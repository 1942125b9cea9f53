"""The Telegram channel on aiogram 3: webhook or long polling in, the gateway core, replies out.

The channel holds no contract logic. It verifies and dedupes updates, decides whether a
group message is addressed to the bot, normalizes the text (the bot's own leading mention
removed, a menu name typed back turned into the original command) and hands an
InboundMessage to ``gateway.handle`` with a sink that renders for Telegram.

This module is the lifecycle and the menus' listeners; the modules it builds do the rest:
``webhook`` or ``polling`` take updates in through the ``intake``, ``updates`` turns them into
inputs, ``outbox`` is what their replies share.
"""

from __future__ import annotations

import asyncio
import contextlib

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.methods.base import Response
from aiogram.types import Message, User
from aiohttp import web

from contract import Command
from gateway.api import Channel, Entry, GatewayAPI, InboundMessage, ReplySink
from gateway.pacing import Budget, Pacer, Rate, budget

from .addressing import Addressing
from .delivery import Requests, Throttle
from .files import TelegramFiles
from .intake import Intake
from .menus import Menus
from .outbox import Outbox
from .pacing import TelegramPacing
from .permissions import Permissions
from .polling import Polling
from .settings import TelegramSettings
from .updates import Updates
from .webhook import WEBHOOK_PATH, Webhook

MENU_DEBOUNCE = 1.0  # seconds: a burst of inventory changes is published once
MAX_IN_FLIGHT = 256  # updates processed at once; past it the webhook answers 503 (redelivered)
# aiogram reads every answer as Response[<the method's result type>], and pydantic keeps such
# parametrized models only while something refers to them: without these references each
# garbage collection dropped them and the next calls built the model classes again.
_RESPONSES = (Response[Message], Response[bool], Response[Message | bool], Response[User])


class TelegramChannel(Channel[TelegramSettings]):
    name = "telegram"
    signed = True  # its routes check the platform's signature or secret header

    def __init__(self, gateway: GatewayAPI, settings: TelegramSettings) -> None:
        super().__init__(gateway, settings)
        if settings.telegram_token is None:
            raise ValueError("the Telegram channel needs SLASHGATE_TELEGRAM_TOKEN")
        secret = settings.telegram_secret  # required in webhook mode (TelegramSettings checks it)
        session = AiohttpSession(
            api=TelegramAPIServer.from_base(settings.telegram_api_base),
            timeout=settings.platform_timeout,
        )
        token = settings.telegram_token.get_secret_value()
        self.pacer = Pacer(self._budget(gateway, settings, token.partition(":")[0]))
        self.pacing = TelegramPacing(self.pacer, settings)
        session.middleware(Requests(self.pacing, gateway.metrics))
        self.bot = Bot(token, session=session)
        self.throttle = Throttle(settings.telegram_edit_interval)
        self.outbox = Outbox(
            self.bot,
            self.throttle,
            self.pacing,
            Permissions(self.bot, gateway, self.name),
            show_reasoning=settings.show_reasoning != "off",
        )
        self.addressing = Addressing(settings.telegram_group_text)
        self.menu_debounce = MENU_DEBOUNCE
        # The policy is configured once the channel is built: asked for at each change.
        self.menus = Menus(
            self.bot,
            lambda: self.menu_debounce,
            lambda name, shared: gateway.access.policy(self.name).owner_only(name, shared),
        )
        files = TelegramFiles(self.bot, settings)
        self.updates = Updates(gateway, self.name, self.outbox, self.addressing, files, self.menus)
        self.intake = Intake(gateway, self.name, self.updates.route, MAX_IN_FLIGHT)
        self.polling = Polling(self.bot, self.intake)
        self._stopping = False
        self.webhook = Webhook(
            self.bot,
            self.intake,
            secret.get_secret_value().encode() if secret else b"",
            settings.webhook_max_body,
            lambda: self._stopping or gateway.closing,
        )
        # Polling, the webhook registration and the default menu are one replica's work.
        self.leader = False
        self._leading: asyncio.Task[None] | None = None

    @staticmethod
    def _budget(gateway: GatewayAPI, settings: TelegramSettings, bot_id: str) -> Budget:
        """The bot's global limit: shared through Redis by the replicas of a Redis store."""
        return budget(
            gateway.store,
            f"{settings.redis_prefix}pacing:telegram:{bot_id}",
            Rate(settings.telegram_rate_global),
        )

    @property
    def drafts(self) -> bool:
        """Whether private chats still stream with sendMessageDraft."""
        return self.outbox.drafts

    def describe(self) -> str:
        where = f"POST {WEBHOOK_PATH}" if self.settings.telegram_mode == "webhook" else "polling"
        me = self.addressing.me
        who = f"@{me.username}" if me and me.username else "bot"
        return f"telegram ({who}, {where})"

    # -- lifecycle ------------------------------------------------------------------------

    def mount(self, app: web.Application) -> None:
        if self.settings.telegram_mode == "webhook":
            self.webhook.mount(app)

    async def readiness(self) -> str | None:
        if self._stopping:
            return "stopping"
        if self.addressing.me is None:
            return "the Bot API has not answered getMe yet"
        if not self.leader:  # another replica polls and registers the webhook
            return None
        if self.settings.telegram_mode == "polling":
            if not self.polling.running:
                return "long polling is not running"
        elif self.settings.telegram_webhook_url and not self.webhook.registered:
            return "the webhook is not registered (setWebhook)"
        return None

    async def check(self) -> str:
        try:
            me = await self.bot.me()
        finally:
            await self.bot.session.close()
        return f"@{me.username} (id {me.id})"

    async def start(self) -> None:
        try:
            await self._start()
        except BaseException:
            await self.bot.session.close()  # the server does not stop a channel that failed
            await self.pacer.aclose()
            raise

    async def _start(self) -> None:
        await self.pacer.budget.prepare()
        self.addressing.know(await self.bot.me())
        self.gateway.subscribe(self.inventory_changed)
        self.gateway.subscribe_conversation(self.conversation_changed)
        self.gateway.label(self.name, self.menu_name)
        menu = self.gateway.menu()
        if menu is not None:
            self.menus.everyone_changed(menu, publish=False)
        if self.gateway.shared:  # replicas: whichever holds the lease does this part
            self._leading = asyncio.create_task(
                self.gateway.lead("telegram:leader", self._elected, self._deposed)
            )
        else:
            await self._elected()

    async def _elected(self) -> None:
        self.leader = True
        if self.gateway.menu() is not None:  # None: the runtime has not answered yet
            await self.menus.publish_everyone()
        if self.settings.telegram_mode == "polling":
            await self.polling.start()
        elif self.settings.telegram_webhook_url:
            await self.webhook.register(self.settings.telegram_webhook_url)

    async def _deposed(self) -> None:
        self.leader = False
        await self.polling.stop()

    async def stop(self) -> None:
        self._stopping = True
        if self._leading is not None:
            self._leading.cancel()
            await asyncio.gather(self._leading, return_exceptions=True)
        await self.polling.stop()
        await self.menus.aclose()
        # The core has cancelled the turns already (Gateway.stop_runs): what is left is
        # their replies going out. Past the grace they are cancelled, and logged.
        await self.intake.close(self.settings.cancel_grace)
        await self.polling.confirm()
        await self.bot.session.close()
        await self.pacer.aclose()

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, ReplySink] | None:
        return await self.updates.recovered(entry)

    # -- the command menu -----------------------------------------------------------------

    def inventory_changed(self, inventory: tuple[Command, ...]) -> None:
        """The gateway's inventory listener: the default menu (not once stopping: the bot
        session is closing).
        """
        if not self._stopping:
            self.menus.everyone_changed(inventory, publish=self.leader)

    def menu_name(self, conversation: str, name: str) -> str | None:
        """How /help spells a command here: its menu name, which clients make tappable."""
        chat = conversation.partition(":")[0]
        with contextlib.suppress(ValueError):
            return self.menus.for_chat(int(chat)).names.get(name)
        return None

    def conversation_changed(self, key: str, inventory: tuple[Command, ...]) -> None:
        """The gateway's conversation listener: a chat's own commands go to that chat's menu
        only (never everybody's).
        """
        channel, _, rest = key.partition(":")
        if channel != self.name or self._stopping:
            return
        chat = rest.partition(":")[0]  # forum topics share their chat's menu
        with contextlib.suppress(ValueError):
            self.menus.chat_changed(int(chat), inventory)
