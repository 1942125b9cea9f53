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
import logging
from dataclasses import replace

from aiogram import Bot, Dispatcher
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import AiogramError, TelegramAPIError
from aiogram.methods.base import Response
from aiogram.types import CallbackQuery, Message, Update, User
from aiohttp import web
from pydantic import ValidationError

from contract import Command
from gateway.attachments import AttachmentError
from gateway.body import BodyError, header_bytes, parse_json, read_body
from gateway.channel import Channel
from gateway.config import Settings
from gateway.core import Gateway
from gateway.inbound import InboundMessage, ReplySink
from gateway.openapi import document
from gateway.state import Entry, StoreUnavailable

from .addressing import Addressing
from .delivery import Requests, Target, Throttle, describe
from .docs import operations
from .files import FileRef, TelegramFiles, file_refs
from .intake import Intake
from .manners import OTHER, Manners
from .menu import Menu
from .menus import Menus
from .metering import Metered
from .outbox import Outbox
from .permissions import Permissions
from .sink import TelegramSink

log = logging.getLogger("slashgate.telegram")

WEBHOOK_PATH = "/telegram/webhook"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
MENU_DEBOUNCE = 1.0  # seconds: a burst of inventory changes is published once
POLL_TIMEOUT = 25  # seconds a getUpdates call waits for news
UPDATES = ("message", "edited_message", "callback_query")  # the update types the bot handles
MAX_IN_FLIGHT = 256  # updates processed at once; past it the webhook answers 503 (redelivered)
# aiogram reads every answer as Response[<the method's result type>], and pydantic keeps such
# parametrized models only while something refers to them: without these references each
# garbage collection dropped them and the next calls built the model classes again.
_RESPONSES = (Response[Message], Response[bool], Response[Message | bool], Response[User])


class TelegramChannel(Channel):
    name = "telegram"

    def __init__(self, gateway: Gateway, settings: Settings) -> None:
        super().__init__(gateway, settings)
        if settings.telegram_token is None:
            raise ValueError("the Telegram channel needs SLASHGATE_TELEGRAM_TOKEN")
        secret = settings.telegram_secret  # required in webhook mode (Settings checks it)
        self._secret = secret.get_secret_value().encode() if secret else b""
        session = AiohttpSession(
            api=TelegramAPIServer.from_base(settings.telegram_api_base),
            timeout=settings.platform_timeout,
        )
        session.middleware(Requests())
        session.middleware(Metered(gateway.metrics))
        self.bot = Bot(settings.telegram_token.get_secret_value(), session=session)
        self.intake = Intake(gateway, self.name, self._route, MAX_IN_FLIGHT)
        # Long polling only: aiogram's dispatcher fetches the updates and hands them to the
        # intake (no FSM: the channel keeps no per-chat states).
        self.dispatcher = Dispatcher(disable_fsm=True)
        self.dispatcher.update.outer_middleware(self.intake)
        self.addressing = Addressing(settings.telegram_group_text)
        self.manners = Manners(self.bot, self.addressing)

        self.throttle = Throttle(settings.telegram_edit_interval)
        self.files = TelegramFiles(self.bot, settings)
        self.outbox = Outbox(
            self.bot,
            self.throttle,
            Permissions(self.bot, gateway, self.name),
            show_reasoning=settings.show_reasoning != "off",
        )
        self.menu_debounce = MENU_DEBOUNCE
        self.menus = Menus(self.bot, lambda: self.menu_debounce)
        self._polling: asyncio.Task[None] | None = None
        self._stopping = False
        self._registered = False  # the webhook was set (webhook mode with telegram_webhook_url)
        # Polling, the webhook registration and the default menu are one replica's work.
        self.leader = False
        self._leading: asyncio.Task[None] | None = None

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
            app.router.add_post(WEBHOOK_PATH, self._webhook)
            document(app, *operations(WEBHOOK_PATH, SECRET_HEADER))

    async def readiness(self) -> str | None:
        if self._stopping:
            return "stopping"
        if self.addressing.me is None:
            return "the Bot API has not answered getMe yet"
        if not self.leader:  # another replica polls and registers the webhook
            return None
        if self.settings.telegram_mode == "polling":
            if self._polling is None or self._polling.done():
                return "long polling is not running"
        elif self.settings.telegram_webhook_url and not self._registered:
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
            raise

    async def _start(self) -> None:
        self.addressing.know(await self.bot.me())
        self.gateway.subscribe(self.inventory_changed)
        self.gateway.subscribe_conversation(self.conversation_changed)
        self.gateway.labelers[self.name] = self.menu_name
        menu = self.gateway.menu()
        if menu is not None:
            self.menus.default.menu = Menu.build(menu)
        if self.gateway.journal.shared:  # replicas: whichever holds the lease does this part
            self._leading = asyncio.create_task(
                self.gateway.journal.lead("telegram:leader", self._elected, self._deposed)
            )
        else:
            await self._elected()

    async def _elected(self) -> None:
        self.leader = True
        if self.gateway.menu() is not None:  # None: the runtime has not answered yet
            await self.menus.default.publish()
        if self.settings.telegram_mode == "polling":
            await self._start_polling()
        elif self.settings.telegram_webhook_url:
            await self.bot.set_webhook(
                self.settings.telegram_webhook_url,
                secret_token=self._secret.decode(),
                allowed_updates=list(UPDATES),
            )
            self._registered = True

    async def _deposed(self) -> None:
        self.leader = False
        await self._stop_polling()

    async def _start_polling(self) -> None:
        self.intake.patient = True  # Telegram keeps an update until the next offset: wait
        await self.bot.delete_webhook(drop_pending_updates=False)  # getUpdates refuses otherwise
        started = asyncio.Event()
        self.dispatcher.startup.register(started.set)
        self._polling = asyncio.create_task(
            self.dispatcher.start_polling(
                self.bot,
                polling_timeout=POLL_TIMEOUT,
                allowed_updates=list(UPDATES),
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

    async def _stop_polling(self) -> None:
        if self._polling is not None and not self._polling.done():
            # Not cancel(): aiogram stops its own polling tasks only when asked to stop.
            await self.dispatcher.stop_polling()
            await self._polling

    async def stop(self) -> None:
        self._stopping = True
        if self._leading is not None:
            self._leading.cancel()
            await asyncio.gather(self._leading, return_exceptions=True)
        await self._stop_polling()
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
        if not hmac.compare_digest(header_bytes(request, SECRET_HEADER), self._secret):
            return _error(401, "missing or wrong X-Telegram-Bot-Api-Secret-Token")
        if self._stopping or self.gateway.closing or self.intake.full:  # Telegram redelivers
            return _error(503, "busy, retry later", headers={"Retry-After": "1"})
        try:
            body = await read_body(request, self.settings.webhook_max_body)
        except BodyError as exc:
            return _error(exc.status, exc.message)
        try:
            update = Update.model_validate_json(body, context={"bot": self.bot})
        except ValidationError as exc:
            if exc.errors()[0]["type"] != "json_invalid":
                return _error(400, "request body is not an update")
            try:  # the shared reading says why: a lone surrogate's field, say
                parse_json(body)
            except BodyError as problem:
                if problem.code == "invalid_text":
                    return _error(400, problem.message)
            return _error(400, "request body is not JSON")
        try:
            # The intake journals the text as it came (valid UTF-8: the parser checked).
            await self.intake.take(update, body.decode())
        except StoreUnavailable as exc:  # not journaled: Telegram must deliver it again
            log.warning("update %d not taken: %s", update.update_id, exc)
            return _error(503, "the gateway's store is unavailable", headers={"Retry-After": "1"})
        return web.json_response({"ok": True})

    # -- updates --------------------------------------------------------------------------

    async def _route(self, update: Update, entry: Entry | None) -> None:
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
            if files:
                try:
                    inbound = replace(inbound, attachments=await self.files.fetch(files))
                except AttachmentError as exc:  # one reply; nothing goes to the runtime
                    await sink.final(self.gateway.failure_reply("invalid", None, str(exc)))
                    return
            await self.gateway.handle(inbound, sink, entry)
        finally:  # also when cancelled at shutdown, or the core failed before its final
            await sink.aclose()

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
            channel=self.name,
            conversation=target.conversation,
            user=str(message.from_user.id),
            text=text,
            message_id=str(message.message_id),
            bot_username=me.username,
            meta={"chat_type": message.chat.type},
        )
        return inbound, TelegramSink(self.outbox, target, message.from_user.id)

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, ReplySink] | None:
        """A journaled message again, its files fetched again (an album's items each alone)."""
        try:
            journaled = entry.body["update"]  # JSON text (a dict in entries of older versions)
            if isinstance(journaled, str):
                update = Update.model_validate_json(journaled, context={"bot": self.bot})
            else:
                update = Update.model_validate(journaled, context={"bot": self.bot})
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
                await self.bot.answer_callback_query(query.id)
        except AiogramError as exc:  # the choice reached the runtime; only its echo is lost
            log.warning("answering a button press failed: %s", describe(exc))

    # -- the command menu -----------------------------------------------------------------

    def inventory_changed(self, inventory: tuple[Command, ...]) -> None:
        """The gateway's inventory listener: the default menu (not once stopping: the bot
        session is closing).
        """
        if self._stopping:
            return
        if self.leader:
            self.menus.default.update(inventory)
        else:  # names typed back from the menu work on every replica
            self.menus.default.menu = Menu.build(inventory)

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


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"ok": False, "description": message}, status=status, headers=headers)
