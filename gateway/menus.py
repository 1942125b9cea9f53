"""The inventory beside the pipeline: the commands the runtime reported, the gateway's own
before them, and the channels' listeners that publish them as menus (global, or one chat's).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from contract import Command

from .host import Labeler, host_commands
from .runtimes.base import SessionInfo
from .tasks import BackgroundTasks

InventoryListener = Callable[[tuple[Command, ...]], Awaitable[None] | None]
ConversationListener = Callable[[str, tuple[Command, ...]], Awaitable[None] | None]


class Menus:
    def __init__(self, background: BackgroundTasks) -> None:
        self._background = background
        self._listeners: list[InventoryListener] = []
        self._conversation_listeners: list[ConversationListener] = []
        self.inventory: tuple[Command, ...] | None = None  # latest runtime inventory seen
        # The menu's host commands: /mode joins once a session shows the agent has modes.
        self._menu_info = SessionInfo()
        self.labelers: dict[str, Labeler] = {}  # channel name -> its spelling of commands

    def subscribe(self, listener: InventoryListener) -> None:
        """Called with the effective inventory (host first) whenever the runtime's changes."""
        self._listeners.append(listener)

    def subscribe_conversation(self, listener: ConversationListener) -> None:
        """Called with (conversation key, its effective inventory) whenever that
        conversation's commands change: for menus scoped to one chat.
        """
        self._conversation_listeners.append(listener)

    def menu(self) -> tuple[Command, ...] | None:
        """The effective inventory for menus; None until the runtime has reported one."""
        if self.inventory is None:
            return None
        return host_commands(self._menu_info) + self.inventory

    def of(self, info: SessionInfo | None) -> tuple[Command, ...]:
        """The effective inventory of a conversation whose session reported ``info`` (host +
        runtime, dynamic included); without one, the menu.
        """
        if info is None:
            return self.menu() or host_commands(SessionInfo())
        known = info.commands if info.commands is not None else self.inventory
        return host_commands(info) + (known or ())

    def changed(self, commands: tuple[Command, ...]) -> None:
        """The runtime's inventory (not one conversation's) is ``commands``."""
        if commands == self.inventory:
            return
        self.inventory = commands
        self._notify(self._listeners, self.menu())

    def conversation_changed(
        self, key: str, info: SessionInfo | None, commands: tuple[Command, ...]
    ) -> None:
        """Conversation ``key`` (its session's ``info``; None once it is forgotten) lists
        ``commands``. It seeds the global menu only while the runtime has given none: a
        conversation's own (dynamic) commands are its own, never everybody's menu.
        """
        modes = info.modes if info is not None else ()
        modes_found = bool(modes) and not self._menu_info.modes
        if modes_found:
            # Else every chat of an agent with modes would differ from the menu by /mode
            # and cost a menu of its own (Telegram: one setMyCommands per chat).
            self._menu_info = SessionInfo(modes=modes)
        if self.inventory is None and commands:
            self.changed(commands)
        elif modes_found and self.inventory is not None:
            self._notify(self._listeners, self.menu())
        menu = host_commands(info or SessionInfo()) + commands
        self._notify(self._conversation_listeners, key, menu)

    def _notify(self, listeners: list[Any], *args: Any) -> None:
        for listener in listeners:
            result = listener(*args)
            if asyncio.iscoroutine(result):
                self._background.spawn(result)
