"""Publishing command menus: everybody's (the default scope for private chats, one for all
groups), one per chat whose conversation has commands of its own (dynamic ones), so that
they never show elsewhere, and one per owner's private chat.

What a sender may not run is not offered (docs/access.md): everybody's menus leave out the
owner-only commands (and, in groups, ``/new``); an owner's private chat gets a menu of its
own with every command, once the owner writes there. A menu is built from the whole
inventory and only its published list leaves commands out, so that a name typed back means
the same command in every scope.

A chat gets a menu of its own only while what it should show differs from everybody's menu
of its kind (its first list, on opening its session, is normally that one). Each scope
publishes debounced (a burst of changes is one call) what its last list calls for, and only
when Telegram does not have it already: a list that differed only for a moment costs no
call, and a chat whose list is back to everybody's loses its own menu (deleteMyCommands),
so it shows everybody's again. Chat menus are kept for the most recently changed
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
from aiogram.types import BotCommand, BotCommandScopeAllGroupChats, BotCommandScopeChat

from contract import Command

from .menu import Menu

log = logging.getLogger("slashgate.telegram")

MAX_CHATS = 1000
Hidden = Callable[[str], bool]  # by inventory name: left out of a scope's published list
OwnerOnly = Callable[[str, bool], bool]  # (name, in a shared conversation): owners' alone


def _nothing(name: str) -> bool:
    return False


class ScopedMenu:
    """One menu scope: the default (``scope`` None), all groups, or one chat."""

    def __init__(
        self,
        bot: Bot,
        scope: BotCommandScopeAllGroupChats | BotCommandScopeChat | None,
        where: str,
        hidden: Hidden,
        debounce: Callable[[], float],
    ) -> None:
        self.bot = bot
        self.scope = scope
        self.where = where  # for the log: "the Telegram menu", "the menu of chat 42"
        self.hidden = hidden
        self.menu = Menu()
        self.own = True  # False: a chat whose menu is everybody's
        self.listed = False  # a chat's conversation reported its own list (not everybody's)
        self._debounce = debounce
        # What Telegram has in this scope; None: nothing (a chat then shows everybody's).
        self._published: tuple[tuple[str, str], ...] | None = None
        self._publisher: asyncio.Task[None] | None = None

    def shown(self) -> tuple[tuple[str, str], ...]:
        """What this scope's menu offers."""
        return self.menu.without(self.hidden)

    def _wanted(self) -> tuple[tuple[str, str], ...] | None:
        """What this scope should hold; None: nothing of its own."""
        return self.shown() if self.own else None

    def update(self, menu: Menu) -> None:
        self.menu = menu  # names typed back work at once
        if self._publisher is None or self._publisher.done():
            self._publisher = asyncio.create_task(self._publish_later())

    async def _publish_later(self) -> None:
        while True:
            await asyncio.sleep(self._debounce())
            if not await self.publish() or self._wanted() == self._published:
                return

    async def publish(self) -> bool:
        """Make Telegram hold what this scope should, unless it does already: setMyCommands,
        or deleteMyCommands for a chat back to everybody's menu. False on failure.
        """
        commands = self._wanted()
        if commands == self._published:
            return True
        try:
            if commands is None:
                await self.bot.delete_my_commands(scope=self.scope)
            else:
                await self.bot.set_my_commands(
                    [BotCommand(command=name, description=text) for name, text in commands],
                    scope=self.scope,
                )
        except TelegramAPIError as exc:
            log.error("Telegram refused the command menu: %s", exc.message)
            return False
        self._published = commands
        if commands is None:
            log.info("removed %s: the chat shows everybody's menu", self.where)
        else:
            log.info("published %d commands to %s", len(commands), self.where)
        return True

    async def aclose(self) -> None:
        if self._publisher is not None and not self._publisher.done():
            self._publisher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._publisher


class Menus:
    def __init__(
        self,
        bot: Bot,
        debounce: Callable[[], float],
        owner_only: OwnerOnly,
        max_chats: int = MAX_CHATS,
    ) -> None:
        self.bot = bot
        self._debounce = debounce
        self.max_chats = max_chats
        self.default = ScopedMenu(
            bot, None, "the Telegram menu", lambda name: owner_only(name, False), debounce
        )
        self.groups = ScopedMenu(
            bot,
            BotCommandScopeAllGroupChats(),
            "the menu of groups",
            lambda name: owner_only(name, True),
            debounce,
        )
        self._chats: OrderedDict[int, ScopedMenu] = OrderedDict()
        # Private chats of owners, as last seen: a few (the owners), not one per sender.
        self._owners: set[int] = set()
        self._retired: set[asyncio.Task[None]] = set()

    def for_chat(self, chat_id: int) -> Menu:
        scoped = self._chats.get(chat_id)
        return scoped.menu if scoped is not None and scoped.own else self.default.menu

    def everyone_changed(self, inventory: tuple[Command, ...], publish: bool) -> None:
        """The runtime's inventory: everybody's menus (published by the leader only), and the
        owners' chats that show it.
        """
        menu = Menu.build(inventory)
        for scope in (self.default, self.groups):
            if publish:
                scope.update(menu)
            else:  # names typed back from the menu work on every replica
                scope.menu = menu
        for chat_id in self._owners:
            scoped = self._chats.get(chat_id)
            if scoped is None or not scoped.listed:
                self._settle(chat_id, menu)

    async def publish_everyone(self) -> None:
        for scope in (self.default, self.groups):
            await scope.publish()

    def chat_changed(self, chat_id: int, inventory: tuple[Command, ...]) -> None:
        """The conversation of ``chat_id`` lists ``inventory``."""
        self._settle(chat_id, Menu.build(inventory), listed=True)

    def sender(self, chat_id: int, owner: bool) -> None:
        """Someone wrote in private chat ``chat_id``: an owner (their menu offers every
        command) or not (once an owner, revoked since: everybody's menu again).
        """
        if owner == (chat_id in self._owners):
            return
        if owner:
            self._owners.add(chat_id)
        else:
            self._owners.discard(chat_id)
        scoped = self._chats.get(chat_id)
        self._settle(chat_id, scoped.menu if scoped is not None else self.default.menu)

    def _settle(self, chat_id: int, menu: Menu, listed: bool | None = None) -> None:
        """Give ``chat_id`` a menu of its own while it should show other than everybody's."""
        everybody = self.groups if chat_id < 0 else self.default  # groups' ids are negative
        hidden = _nothing if chat_id in self._owners else everybody.hidden
        own = menu.without(hidden) != everybody.shown()
        scoped = self._chats.pop(chat_id, None)
        if scoped is None:
            if not own:
                return  # a new chat's first list is everybody's menu: nothing of its own yet
            where = f"the menu of chat {chat_id}"
            scoped = ScopedMenu(
                self.bot, BotCommandScopeChat(chat_id=chat_id), where, hidden, self._debounce
            )
        self._chats[chat_id] = scoped
        scoped.own = own  # back to everybody's: its own menu goes when the debounce ends
        scoped.hidden = hidden
        if listed is not None:
            scoped.listed = listed
        scoped.update(menu)
        while len(self._chats) > self.max_chats:
            _, oldest = self._chats.popitem(last=False)
            task = asyncio.create_task(oldest.aclose())
            self._retired.add(task)
            task.add_done_callback(self._retired.discard)

    async def aclose(self) -> None:
        scopes = [self.default, self.groups, *self._chats.values()]
        await asyncio.gather(*(s.aclose() for s in scopes), *self._retired)
