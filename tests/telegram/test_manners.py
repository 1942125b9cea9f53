"""Telegram manners: /help that can be tapped, answers to edits and to messages the agent
cannot read, a mark on queued input, and one log line for a user who blocked the bot.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from channels.telegram.manners import EDITED, QUEUED, QUEUED_REACTION
from contract import Command
from gateway.events import MessageDelta, MessageEnd
from tests.faults import started_open

from .fake_bot_api import FakeBotAPI
from .helpers import GROUP, PRIVATE, Scripted, Start, message_update

COMMANDS = (
    Command(name="pr-review", description="Review a PR", hint="<number>"),
    Command(name="help", description="The agent's own help"),
    Command(name="web", description="Search", hint="query"),
)


def other_update(
    chat_id: int, content: dict[str, Any], reply_to_bot: bool = False
) -> dict[str, Any]:
    """A message without text (a sticker, a location, ...)."""
    update = message_update(chat_id, "x", reply_to_bot=reply_to_bot)
    message = update["message"]
    del message["text"]
    message.update(content)
    return update


async def test_help_lists_tappable_menu_names(telegram: Start, fake: FakeBotAPI) -> None:
    async with telegram(Scripted(*COMMANDS)) as served:
        await served.deliver(message_update(PRIVATE, "/help"))
        [sent] = fake.messages(PRIVATE)
        lines = sent.text.splitlines()
        assert "• /help — List commands" in lines
        assert "• /pr_review <number> — Review a PR" in lines  # the menu spelling, hint once
        assert "• /web <query> — Search" in lines
        # The agent's /help is listed once, under its alias; the gateway's keeps the name.
        assert "• /agent_help — The agent's own help (the agent's /help)" in lines
        assert sum(line.startswith("• /help ") for line in lines) == 1
        # Names are plain text (Telegram links them); only the hints are code.
        codes = [sent.text[e["offset"] : e["offset"] + e["length"]] for e in sent.entities]
        assert "<number>" in codes and not any(c.startswith("/") for c in codes)


async def test_the_agents_own_help_runs_by_its_alias(telegram: Start, fake: FakeBotAPI) -> None:
    runtime = Scripted(*COMMANDS)
    async with telegram(runtime) as served:
        await served.post(message_update(PRIVATE, "/agent_help topics"))  # as tapped in the menu
        turn = await runtime.next_turn()
        assert turn.turn.command == "help" and turn.turn.args == "topics"
        assert turn.turn.message.payload.nodes[0].name == "help"  # type: ignore[union-attr]
        turn.emit(MessageDelta("the agent's help"), MessageEnd())
        await fake.wait(lambda: fake.texts(PRIVATE) == ["the agent's help"])


async def test_an_edited_message_is_answered_once(telegram: Start, fake: FakeBotAPI) -> None:
    async with telegram() as served:
        update = message_update(PRIVATE, "/echo frist")
        edited = {"update_id": update["update_id"] + 1, "edited_message": update["message"]}
        edited["edited_message"] = {**update["message"], "text": "/echo first"}
        edited["edited_message"]["edit_date"] = int(time.time())
        await served.deliver(edited)
        assert fake.texts(PRIVATE) == [EDITED]
        await served.deliver({**edited, "update_id": edited["update_id"] + 1})
        assert fake.texts(PRIVATE) == [EDITED]


async def test_messages_the_agent_cannot_read_get_a_word(telegram: Start, fake: FakeBotAPI) -> None:
    sticker = {
        "sticker": {
            "file_id": "s1", "file_unique_id": "u1", "type": "regular",
            "width": 512, "height": 512, "is_animated": False, "is_video": False,
        }
    }  # fmt: skip
    location = {"location": {"latitude": 52.5, "longitude": 13.4}}
    async with telegram() as served:
        await served.deliver(other_update(PRIVATE, sticker))
        await served.deliver(other_update(PRIVATE, location))
        assert fake.texts(PRIVATE) == [
            "Stickers do not reach the agent; it reads text (and files).",
            "Locations do not reach the agent; it reads text (and files).",
        ]
        # In a group, only a sticker that answers the bot.
        await served.deliver(other_update(GROUP, sticker))
        assert fake.texts(GROUP) == []
        await served.deliver(other_update(GROUP, sticker, reply_to_bot=True))
        assert fake.texts(GROUP) == ["Stickers do not reach the agent; it reads text (and files)."]


async def test_queued_input_is_marked_until_its_reply(telegram: Start, fake: FakeBotAPI) -> None:
    runtime = Scripted()
    async with telegram(runtime) as served:
        await served.post(message_update(PRIVATE, "first"))
        first = await runtime.next_turn()
        queued = message_update(PRIVATE, "second")
        await served.post(queued)
        key = (PRIVATE, queued["message"]["message_id"])
        await fake.wait(lambda: key in fake.reactions)
        assert fake.reactions[key] == [{"type": "emoji", "emoji": QUEUED_REACTION}]
        first.emit(MessageDelta("one"), MessageEnd())
        second = await runtime.next_turn()
        second.emit(MessageDelta("two"), MessageEnd())
        await fake.wait(lambda: fake.texts(PRIVATE) == ["one", "two"])
        assert fake.reactions[key] == []  # answered: the mark is gone


async def test_where_reactions_are_refused_a_queued_message_gets_a_reply(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted()
    fake.inject("setMessageReaction", 400, "Bad Request: REACTIONS_TOO_MANY")
    async with telegram(runtime) as served:
        await served.post(message_update(GROUP, "@gw_bot first"))
        first = await runtime.next_turn()
        await served.post(message_update(GROUP, "@gw_bot second"))
        await fake.wait(lambda: fake.texts(GROUP) == [QUEUED])
        first.emit(MessageEnd())
        (await runtime.next_turn()).emit(MessageEnd())
        await fake.wait(lambda: len(fake.texts(GROUP)) == 3)


async def test_a_user_who_blocked_the_bot_is_one_warning_line(
    telegram: Start, fake: FakeBotAPI, caplog: pytest.LogCaptureFixture
) -> None:
    fake.inject("sendMessage", 403, "Forbidden: bot was blocked by the user", times=2)
    async with telegram() as served:
        with caplog.at_level(logging.INFO):
            await served.deliver(message_update(PRIVATE, "/echo hi"))
            await served.deliver(message_update(PRIVATE, "/echo again"))
    mine = [r for r in caplog.records if r.levelno >= logging.WARNING and not started_open(r)]
    assert [r.getMessage() for r in mine] == [
        f"chat {PRIVATE} refuses the bot (Forbidden: bot was blocked by the user); "
        "the reply is dropped"
    ] * 2
    assert not any(r.exc_info for r in caplog.records)
