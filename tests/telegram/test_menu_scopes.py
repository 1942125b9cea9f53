"""A chat has a menu of its own only while what it should offer differs from everybody's: a
list that equals the default costs no setMyCommands for the chat, and a chat whose list is
back to the default loses its own menu, so that it shows the default one (and what that
becomes). Owner-only commands are offered in owners' private chats alone.
"""

from __future__ import annotations

from typing import Any

from contract import Command
from gateway.events import Mode, SessionUpdated
from gateway.runtimes.base import RuntimeSession, UpdateListener
from tests.access.recording import pairing_code
from tests.conftest import ACCESS_DEFAULTS

from .fake_bot_api import Call, FakeBotAPI
from .helpers import GROUP, PRIVATE, USER, Scripted, Start, message_update, published

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


async def test_only_an_owners_private_chat_offers_the_owners_commands(
    telegram: Start, fake: FakeBotAPI
) -> None:
    owner = PRIVATE + 3
    async with telegram(Moded(GO), telegram_owners=[str(owner)]) as served:
        served.channel.menu_debounce = 0.0
        for chat in (PRIVATE, PRIVATE + 1):
            await served.deliver(message_update(chat, "/help", user_id=chat))
        await served.deliver(message_update(GROUP, "/help@gw_bot", user_id=owner))
        await served.deliver(message_update(owner, "/help", user_id=owner))
        # /mode is the owners' (docs/access.md): their private chat alone offers it.
        await fake.wait(lambda: published(fake, owner) == [*HOST, "mode", "go"])
        assert published(fake) == [*HOST, "go"]
        # In a group /new is the owners' too: everybody's menu there leaves it out, owners'
        # included (a group's menu is the same for all its members).
        assert fake.menu_in(GROUP) == ["help", "cancel", "status", "go"]
        # The other chats' lists, /mode included, are everybody's menu: no call of their own.
        assert list(fake.chat_commands) == [owner]
        for chat in (PRIVATE, PRIVATE + 1):
            assert fake.menu_in(chat) == [*HOST, "go"]


async def test_an_owner_approved_while_running_gets_every_command_until_revoked(
    telegram: Start, fake: FakeBotAPI
) -> None:
    async with telegram(Moded(GO), **ACCESS_DEFAULTS) as served:
        served.channel.menu_debounce = 0.0
        access = served.server.gateway.access
        await served.deliver(message_update(PRIVATE, "hello"))
        code = pairing_code(fake.messages(PRIVATE)[0].text)
        await access.approve("telegram", code)  # the first approved: the owner
        await served.deliver(message_update(PRIVATE, "/help"))
        await fake.wait(lambda: fake.menu_in(PRIVATE) == [*HOST, "mode", "go"])

        await access.books.change("telegram", lambda book: book.revoke(str(USER)))
        await served.deliver(message_update(PRIVATE, "/help"))  # a stranger again
        await fake.wait(lambda: PRIVATE not in fake.chat_commands)
        assert fake.menu_in(PRIVATE) == [*HOST, "go"]
