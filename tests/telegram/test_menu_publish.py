"""The menu in Telegram: published at start, re-published (debounced) on change, never empty
for want of an answer, and menu names typed back run the original command.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from contract import Command
from gateway.events import MessageDelta, MessageEnd

from .fake_bot_api import FakeBotAPI
from .helpers import PRIVATE, SECRET, Scripted, Start, message_update, published

HOST = ["help", "new", "cancel", "status"]
INVENTORY = (
    Command(name="pr-review", description="Review a pull request", hint="PR number"),
    Command(name="skill:triage", description="Triage an issue"),
    Command(name="memory show", description="Show memory"),
)


async def test_the_menu_is_published_at_start_with_telegram_names(
    telegram: Start, fake: FakeBotAPI
) -> None:
    async with telegram(Scripted(*INVENTORY)):
        assert published(fake) == [*HOST, "pr_review", "skill_triage", "memory_show"]
        assert fake.commands is not None
        assert fake.commands[4]["description"] == "Review a pull request"
        assert len(fake.calls_to("setMyCommands", "default")) == 1


async def test_a_menu_name_typed_back_runs_the_original_command(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(*INVENTORY)
    async with telegram(runtime) as served:
        await served.post(message_update(PRIVATE, "/pr_review 12  please"))
        turn = await runtime.next_turn()
        assert (turn.turn.command, turn.turn.args) == ("pr-review", "12  please")
        payload = turn.turn.message.payload.model_dump(mode="json", exclude_none=True)
        assert payload["source"] == "/pr-review 12  please"  # the original name, rest as typed
        lead = {"kind": "slash_command", "start": 0, "end": 10, "raw": "/pr-review"}
        assert payload["nodes"][0] == {**lead, "name": "pr-review"}
        turn.emit(MessageDelta("reviewed"), MessageEnd())
        await fake.wait(lambda: fake.texts(PRIVATE) == ["reviewed"])


async def test_nothing_is_published_before_the_runtime_answers(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(Command(name="go", description="Go"), static=False)
    async with telegram(runtime) as served:
        served.channel.menu_debounce = 0.05
        assert fake.calls_to("setMyCommands") == []  # start is over: nothing was known
        await served.deliver(message_update(PRIVATE, "/help"))  # opens a session: it reports
        await fake.wait(lambda: published(fake) == [*HOST, "go"])


async def test_a_chats_own_commands_go_to_that_chats_menu_only(
    telegram: Start, fake: FakeBotAPI
) -> None:
    async with telegram() as served:  # the demo runtime: /remember adds a command
        served.channel.menu_debounce = 0.05
        await served.deliver(message_update(PRIVATE, "/remember alpha first"))
        await served.deliver(message_update(PRIVATE, "/remember beta second"))
        await fake.wait(lambda: {"alpha", "beta"} <= set(published(fake, PRIVATE) or ()))
        await served.deliver(message_update(PRIVATE, "/forget alpha"))
        await fake.wait(lambda: "alpha" not in (published(fake, PRIVATE) or ()))
        assert "beta" in (published(fake, PRIVATE) or ())
        assert not {"alpha", "beta"} & set(published(fake) or ()), "not in everybody's menu"


async def test_changes_are_republished_once_per_burst(telegram: Start, fake: FakeBotAPI) -> None:
    alpha = Command(name="alpha", description="A")
    beta = Command(name="beta", description="B")
    async with telegram(Scripted(*INVENTORY)) as served:
        channel, menu = served.channel, served.server.gateway.menu() or ()
        # However short the debounce, changes made before it ends go out together: here
        # both come in the same step, so no timing can split them.
        channel.menu_debounce = 0.0
        channel.inventory_changed((*menu, alpha))
        channel.inventory_changed((*menu, alpha, beta))
        await fake.wait(lambda: {"alpha", "beta"} <= set(published(fake) or ()))
        assert (
            len(fake.calls_to("setMyCommands", "default")) == 2
        )  # at start, then both changes at once
        channel.inventory_changed((*menu, beta))
        await fake.wait(lambda: "alpha" not in (published(fake) or ()))
        assert "beta" in (published(fake) or ())
        assert len(fake.calls_to("setMyCommands", "default")) == 3


async def test_no_change_is_published_after_the_stop(telegram: Start, fake: FakeBotAPI) -> None:
    async with telegram(Scripted(*INVENTORY)) as served:
        served.channel.menu_debounce = 0.0
    # The gateway may still report changes while it closes its sessions.
    late = (Command(name="late", description="Too late"),)
    served.channel.inventory_changed(late)
    served.channel.conversation_changed(f"telegram:{PRIVATE}", late)
    coroutines = [getattr(t.get_coro(), "__qualname__", "") for t in asyncio.all_tasks()]
    assert "ScopedMenu._publish_later" not in coroutines
    assert len(fake.calls_to("setMyCommands", "default")) == 1


async def test_a_large_inventory_is_cut_to_what_telegram_accepts(
    telegram: Start, fake: FakeBotAPI
) -> None:
    many = [Command(name=f"tool-{i}", description="d" * 300) for i in range(120)]
    clashing = [
        Command(name="tool_0", description="the real tool_0"),
        Command(name="😀", description="x"),
    ]
    async with telegram(Scripted(*clashing, *many)):
        names = published(fake)
        assert names is not None and len(names) == 100  # the fake checked names and descriptions
        assert names[:6] == [*HOST, "tool_0", "tool_0_2"]


async def test_a_refused_menu_is_logged_and_the_bot_still_runs(
    telegram: Start, fake: FakeBotAPI, caplog: pytest.LogCaptureFixture
) -> None:
    fake.inject("setMyCommands", 400, "Bad Request: BOT_COMMAND_INVALID")
    with caplog.at_level(logging.DEBUG):  # every logger, aiogram's too
        async with telegram() as served:
            await served.deliver(message_update(PRIVATE, "/echo still here"))
            assert fake.texts(PRIVATE) == ["still here"]
    assert "Telegram refused the command menu: Bad Request: BOT_COMMAND_INVALID" in caplog.text
    assert fake.token not in caplog.text and SECRET not in caplog.text


async def test_a_chats_own_menu_name_typed_back_runs_its_command(
    telegram: Start, fake: FakeBotAPI
) -> None:
    async with telegram() as served:
        served.channel.menu_debounce = 0.05
        await served.deliver(message_update(PRIVATE, "/remember stand-up Daily at 9"))
        await fake.wait(lambda: "stand_up" in (published(fake, PRIVATE) or ()))
        await served.deliver(message_update(PRIVATE, "/stand_up"))
        await fake.wait(lambda: "Daily at 9" in fake.texts(PRIVATE))
