"""A chat has a menu of its own only while its commands differ from everybody's: a list that
equals the default costs no setMyCommands for the chat, and a chat whose list is back to the
default loses its own menu, so that it shows the default one (and what that becomes).
"""

from __future__ import annotations

from typing import Any

from contract import Command
from gateway.events import Mode, SessionUpdated
from gateway.runtimes.base import RuntimeSession, UpdateListener

from .fake_bot_api import Call, FakeBotAPI
from .helpers import PRIVATE, Scripted, Start, message_update, published

HOST = ["help", "new", "cancel", "status"]
GO = Command(name="go", description="Go")
EXTRA = Command(name="extra", description="Only in this chat")


class Loading(Scripted):
    """Reports no commands when a session opens, then its list at once (as an agent may while
    it loads); the test reports more later through ``updates``.
    """

    def __init__(self, *commands: Command) -> None:
        super().__init__(*commands)
        self.updates: dict[str, UpdateListener] = {}

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        self.updates[key] = updates
        updates(SessionUpdated(commands=()))
        return await super().open(key, updates)


def scoped(fake: FakeBotAPI, method: str, chat: int) -> list[Call]:
    """The calls of ``method`` to one chat's scope."""
    scope: dict[str, Any] = {"type": "chat", "chat_id": chat}
    return [call for call in fake.calls_to(method) if call.params.get("scope") == scope]


async def test_a_new_chat_with_the_default_commands_costs_no_call_of_its_own(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Loading(GO)
    async with telegram(runtime) as served:
        served.channel.menu_debounce = 0.0
        await served.deliver(message_update(PRIVATE, "/help"))  # opens the chat's session
        # Later the chat gets a command of its own: now it needs a menu of its own. (Waiting
        # for it also shows that the chat's earlier lists were settled: no call for them.)
        [key] = runtime.keys
        runtime.updates[key](SessionUpdated(commands=(GO, EXTRA)))
        await fake.wait(lambda: published(fake, PRIVATE) == [*HOST, "go", "extra"])
        assert len(scoped(fake, "setMyCommands", PRIVATE)) == 1
        assert published(fake) == [*HOST, "go"]


async def test_a_chat_back_to_the_default_commands_shows_the_default_menu(
    telegram: Start, fake: FakeBotAPI
) -> None:
    async with telegram() as served:  # the demo runtime: /remember adds a command
        served.channel.menu_debounce = 0.0
        await served.deliver(message_update(PRIVATE, "/remember alpha first"))
        await fake.wait(lambda: "alpha" in (published(fake, PRIVATE) or ()))
        await served.deliver(message_update(PRIVATE, "/forget alpha"))
        await fake.wait(lambda: PRIVATE not in fake.chat_commands)  # deleteMyCommands
        assert len(scoped(fake, "setMyCommands", PRIVATE)) == 1
        assert len(scoped(fake, "deleteMyCommands", PRIVATE)) == 1


class Moded(Scripted):
    """An agent with modes (as claude-agent-acp): each session reports them with its list."""

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        session = await super().open(key, updates)
        updates(SessionUpdated(commands=self.commands, modes=(Mode(id="plan", name="Plan"),)))
        return session


async def test_chats_of_an_agent_with_modes_share_the_default_menu(
    telegram: Start, fake: FakeBotAPI
) -> None:
    async with telegram(Moded(GO)) as served:
        served.channel.menu_debounce = 0.0
        for chat in (PRIVATE, PRIVATE + 1, PRIVATE + 2):
            await served.deliver(message_update(chat, "/help"))
        # The default menu offers /mode once a session shows the agent has modes, so that
        # the chats, whose lists all hold /mode, need no menu of their own.
        await fake.wait(lambda: "mode" in (published(fake) or ()))
        await served.deliver(message_update(PRIVATE + 3, "/help"))
        for chat in range(PRIVATE, PRIVATE + 4):
            assert scoped(fake, "setMyCommands", chat) == []
        assert fake.chat_commands == {}
