"""Publishing command menus: the default one for every chat, and one per chat whose
conversation has commands of its own (dynamic ones), so that they never show elsewhere.

A chat gets a menu of its own only while its commands differ from the default menu (its
first list, on opening its session, is normally the default one). Each scope publishes
debounced (a burst of changes is one call) what its last list calls for, and only when
Telegram does not have it already: a list that differed only for a moment costs no call,
and a chat whose list is back to the default loses its own menu (deleteMyCommands), so it
shows the default one again. Chat menus are kept for the most recently changed
``max_chats`` chats; a chat that falls out, or has nothing of its own, reads names back
with the default menu.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable

from aiogram import Bot
from aiogram.exceptions import TelegramAPIError
from aiogram.types import BotCommand, BotCommandScopeChat

from contract import Command

from .menu import Menu

log = logging.getLogger("slashgate.telegram")

MAX_CHATS = 1000


class ScopedMenu:
    """One menu scope: the default (``chat_id`` None) or one chat."""

    def __init__(self, bot: Bot, chat_id: int | None, debounce: Callable[[], float]) -> None:
        self.bot = bot
        self.chat_id = chat_id
        self.menu = Menu()
        self.own = True  # False: a chat whose commands are the default menu's
        self._debounce = debounce
        # What Telegram has in this scope; None: nothing (a chat then shows the default).
        self._published: tuple[tuple[str, str], ...] | None = None
        self._publisher: asyncio.Task[None] | None = None

    def _wanted(self) -> tuple[tuple[str, str], ...] | None:
        """What this scope should hold; None: nothing of its own."""
        return self.menu.commands if self.own else None

    def update(self, inventory: tuple[Command, ...]) -> None:
        self.menu = Menu.build(inventory)  # names typed back work at once
        if self._publisher is None or self._publisher.done():
            self._publisher = asyncio.create_task(self._publish_later())

    async def _publish_later(self) -> None:
        while True:
            await asyncio.sleep(self._debounce())
            if not await self.publish() or self._wanted() == self._published:
                return

    async def publish(self) -> bool:
        """Make Telegram hold what this scope should, unless it does already: setMyCommands,
        or deleteMyCommands for a chat back to the default menu. False on failure.
        """
        commands = self._wanted()
        if commands == self._published:
            return True
        scope = None if self.chat_id is None else BotCommandScopeChat(chat_id=self.chat_id)
        where = "the Telegram menu" if self.chat_id is None else f"the menu of chat {self.chat_id}"
        try:
            if commands is None:
                await self.bot.delete_my_commands(scope=scope)
            else:
                await self.bot.set_my_commands(
                    [BotCommand(command=name, description=text) for name, text in commands],
                    scope=scope,
                )
        except TelegramAPIError as exc:
            log.error("Telegram refused the command menu: %s", exc.message)
            return False
        self._published = commands
        if commands is None:
            log.info("removed %s: the chat shows the default menu", where)
        else:
            log.info("published %d commands to %s", len(commands), where)
        return True

    async def aclose(self) -> None:
        if self._publisher is not None and not self._publisher.done():
            self._publisher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._publisher


class Menus:
    def __init__(self, bot: Bot, debounce: Callable[[], float], max_chats: int = MAX_CHATS) -> None:
        self.bot = bot
        self._debounce = debounce
        self.max_chats = max_chats
        self.default = ScopedMenu(bot, None, debounce)
        self._chats: OrderedDict[int, ScopedMenu] = OrderedDict()
        self._retired: set[asyncio.Task[None]] = set()

    def for_chat(self, chat_id: int) -> Menu:
        scoped = self._chats.get(chat_id)
        return scoped.menu if scoped is not None and scoped.own else self.default.menu

    def chat_changed(self, chat_id: int, inventory: tuple[Command, ...]) -> None:
        own = Menu.build(inventory).commands != self.default.menu.commands
        scoped = self._chats.pop(chat_id, None)
        if scoped is None:
            if not own:
                return  # a new chat's first list is everybody's menu: nothing of its own yet
            scoped = ScopedMenu(self.bot, chat_id, self._debounce)
        self._chats[chat_id] = scoped
        scoped.own = own  # back to the default: its own menu goes when the debounce ends
        scoped.update(inventory)
        while len(self._chats) > self.max_chats:
            _, oldest = self._chats.popitem(last=False)
            task = asyncio.create_task(oldest.aclose())
            self._retired.add(task)
            task.add_done_callback(self._retired.discard)

    async def aclose(self) -> None:
        scopes = [self.default, *self._chats.values()]
        await asyncio.gather(*(s.aclose() for s in scopes), *self._retired)
