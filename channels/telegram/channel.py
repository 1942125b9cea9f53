"""The Telegram channel on aiogram 3: webhook or long polling in, the gateway core, replies out.

The channel holds no contract logic. It verifies and dedupes updates, decides whether a
group message is addressed to the bot, normalizes the text (the bot's own leading mention
removed, a menu name typed back turned into the original command) and hands an
InboundMessage to ``Gateway.handle`` with a sink that renders for Telegram.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import re

from aiogram import Bot, Dispatcher, Router
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import TelegramAPIError
from aiogram.types import CallbackQuery, Message, MessageEntity, Update, User
from aiohttp import web
from pydantic import ValidationError

from contract import Command, utf16_len
from gateway.channel import Channel
from gateway.config import Settings
from gateway.core import Gateway
from gateway.inbound import InboundMessage

from .delivery import Requests, Target, Throttle
from .intake import Intake
from .menu import Menu
from .menus import Menus
from .permissions import Permissions
from .sink import TelegramSink

log = logging.getLogger("slashgate.telegram")

WEBHOOK_PATH = "/telegram/webhook"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
MENU_DEBOUNCE = 1.0  # seconds: a burst of inventory changes is published once
POLL_TIMEOUT = 25  # seconds a getUpdates call waits for news
MAX_IN_FLIGHT = 256  # updates processed at once; past it the webhook answers 503 (redelivered)


class TelegramChannel(Channel):
    name = "telegram"

    def __init__(self, gateway: Gateway, settings: Settings) -> None:
        super().__init__(gateway, settings)
        if settings.telegram_token is None:
            raise ValueError("the Telegram channel needs SLASHGATE_TELEGRAM_TOKEN")
        secret = settings.telegram_secret  # required in webhook mode (Settings checks it)
        self._secret = secret.get_secret_value().encode() if secret else b""
        session = AiohttpSession(api=TelegramAPIServer.from_base(settings.telegram_api_base))
        session.middleware(Requests())
        self.bot = Bot(settings.telegram_token.get_secret_value(), session=session)
        self.intake = Intake(MAX_IN_FLIGHT)
        self.dispatcher = Dispatcher()
        self.dispatcher.update.outer_middleware(self.intake)
        router = Router(name="slashgate")
        router.message.register(self._on_message)
        router.callback_query.register(self._on_callback)
        self.dispatcher.include_router(router)

        self.throttle = Throttle(settings.telegram_edit_interval)
        self.permissions = Permissions(self.bot, gateway, self.name)
        self.drafts = True  # sendMessageDraft available (until the server says otherwise)
        self.menu_debounce = MENU_DEBOUNCE
        self.menus = Menus(self.bot, lambda: self.menu_debounce)
        self.me: User | None = None
        self._mention: re.Pattern[str] | None = None
        self._polling: asyncio.Task[None] | None = None
        self._stopping = False

    def describe(self) -> str:
        where = f"POST {WEBHOOK_PATH}" if self.settings.telegram_mode == "webhook" else "polling"
        who = f"@{self.me.username}" if self.me and self.me.username else "bot"
        return f"telegram ({who}, {where})"

    # -- lifecycle ------------------------------------------------------------------------

    def mount(self, app: web.Application) -> None:
        if self.settings.telegram_mode == "webhook":
            app.router.add_post(WEBHOOK_PATH, self._webhook)

    async def start(self) -> None:
        try:
            await self._start()
        except BaseException:
            await self.bot.session.close()  # the server does not stop a channel that failed
            raise

    async def _start(self) -> None:
        self.me = await self.bot.me()
        username = self.me.username or ""
        self._mention = re.compile(rf"\s*@{re.escape(username)}(?![A-Za-z0-9_])[,:]?\s*", re.I)
        self.gateway.subscribe(self.inventory_changed)
        self.gateway.subscribe_conversation(self.conversation_changed)
        menu = self.gateway.menu()
        if menu is not None:  # None: the runtime has not answered yet, publish nothing
            self.menus.default.menu = Menu.build(menu)
            await self.menus.default.publish()
        if self.settings.telegram_mode == "polling":
            await self._start_polling()
        elif self.settings.telegram_webhook_url:
            await self.bot.set_webhook(
                self.settings.telegram_webhook_url,
                secret_token=self._secret.decode(),
                allowed_updates=self.dispatcher.resolve_used_update_types(),
            )

    async def _start_polling(self) -> None:
        await self.bot.delete_webhook(drop_pending_updates=False)  # getUpdates refuses otherwise
        started = asyncio.Event()
        self.dispatcher.startup.register(started.set)
        self._polling = asyncio.create_task(
            self.dispatcher.start_polling(
                self.bot,
                polling_timeout=POLL_TIMEOUT,
                handle_as_tasks=False,  # the intake makes the tasks (and keeps them)
                handle_signals=False,
                close_bot_session=False,
            )
        )
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait({waiting, self._polling}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if self._polling.done():
            self._polling.result()  # it failed to start: say why

    async def stop(self) -> None:
        self._stopping = True
        if self._polling is not None and not self._polling.done():
            # Not cancel(): aiogram stops its own polling tasks only when asked to stop.
            await self.dispatcher.stop_polling()
            await self._polling
        await self.menus.aclose()
        # The core has cancelled the turns already (Gateway.stop_runs): what is left is
        # their replies going out. Past the grace they are cancelled, and logged.
        await self.intake.close(self.settings.cancel_grace)
        if self._polling is not None:
            await self._confirm_polled()
        await self.bot.session.close()

    async def _confirm_polled(self) -> None:
        """Tell Telegram the updates handled so far are done, so a restart does not redo them
        (polling confirms an update only with the next getUpdates call).
        """
        last = self.intake.last_update_id
        if last is None:
            return
        try:
            await self.bot.get_updates(offset=last + 1, limit=1, timeout=0)
        except TelegramAPIError as exc:
            log.warning("could not confirm the last updates: %s", exc.message)

    # -- the webhook ----------------------------------------------------------------------

    async def _webhook(self, request: web.Request) -> web.Response:
        presented = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(presented, self._secret):
            return _error(401, "missing or wrong X-Telegram-Bot-Api-Secret-Token")
        if self._stopping or self.gateway.closing or self.intake.full:  # Telegram redelivers
            return _error(503, "busy, retry later", headers={"Retry-After": "1"})
        limit = self.settings.webhook_max_body
        body = await request.content.read(limit + 1)
        if len(body) > limit:
            return _error(413, f"update over the limit of {limit} bytes")
        try:
            data = json.loads(body)
            update = Update.model_validate(data, context={"bot": self.bot})
        except (ValueError, ValidationError) as exc:
            reason = "not an update" if isinstance(exc, ValidationError) else "not JSON"
            return _error(400, f"request body is {reason}")
        await self.dispatcher.feed_update(self.bot, update)
        return web.json_response({"ok": True})

    # -- updates --------------------------------------------------------------------------

    async def _on_message(self, message: Message) -> None:
        text = message.text if message.text is not None else message.caption
        if text is None or message.from_user is None or self.me is None:
            return  # no text (stickers, service messages) or not from a person
        if message.from_user.id == self.me.id:
            return
        private = message.chat.type == "private"
        if not private and not self._addressed(message, text):
            return
        text = self._strip_mention(text)
        if not text.strip():
            return
        text = self.menus.for_chat(message.chat.id).rewrite(text)
        thread = message.message_thread_id if message.is_topic_message else None
        target = Target(message.chat.id, thread, message.message_id, private)
        inbound = InboundMessage(
            channel=self.name,
            conversation=target.conversation,
            user=str(message.from_user.id),
            text=text,
            message_id=str(message.message_id),
            bot_username=self.me.username,
            meta={"chat_type": message.chat.type},
        )
        sink = TelegramSink(self, target, message.from_user.id)
        try:
            await self.gateway.handle(inbound, sink)
        finally:  # also when cancelled at shutdown, or the core failed before its final
            await sink.aclose()

    async def _on_callback(self, query: CallbackQuery) -> None:
        if Permissions.handles(query):
            await self.permissions.answer(query)
        else:
            await self.bot.answer_callback_query(query.id)

    def _addressed(self, message: Message, text: str) -> bool:
        """In groups: commands always; other text when the bot is mentioned or replied to
        (or always, with ``telegram_group_text = "all"``).
        """
        if self.settings.telegram_group_text == "all":
            return True
        assert self.me is not None
        entities = message.entities if message.text is not None else message.caption_entities
        start = utf16_len(text[: len(text) - len(text.lstrip())])
        for entity in entities or ():
            if entity.type == "bot_command" and entity.offset == start:
                return True
            if self._mentions_me(entity, text):
                return True
        replied = message.reply_to_message
        return bool(
            replied is not None
            and replied.forum_topic_created is None  # topic messages "reply" to the topic's root
            and replied.from_user is not None
            and replied.from_user.id == self.me.id
        )

    def _mentions_me(self, entity: MessageEntity, text: str) -> bool:
        assert self.me is not None
        if entity.type == "text_mention":
            return entity.user is not None and entity.user.id == self.me.id
        if entity.type == "mention" and self.me.username:
            return entity.extract_from(text).lower() == f"@{self.me.username.lower()}"
        return False

    def _strip_mention(self, text: str) -> str:
        """The bot's own leading mention is the channel's business, not the input's."""
        if self._mention is None or not self.me or not self.me.username:
            return text
        match = self._mention.match(text)
        return text[match.end() :] if match else text

    # -- the command menu -----------------------------------------------------------------

    def inventory_changed(self, inventory: tuple[Command, ...]) -> None:
        """The gateway's inventory listener: the default menu (not once stopping: the bot
        session is closing).
        """
        if not self._stopping:
            self.menus.default.update(inventory)

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


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"ok": False, "description": message}, status=status, headers=headers)
