"""Who the bot answers: commands always, group text only when addressed, never other bots'."""

from __future__ import annotations

import pytest

from .fake_bot_api import FakeBotAPI
from .helpers import GROUP, PRIVATE, USER, Scripted, Start, message_update


async def test_group_text_needs_a_mention_or_a_reply(telegram: Start, fake: FakeBotAPI) -> None:
    async with telegram() as served:
        await served.deliver(message_update(GROUP, "just chatting"))
        await served.deliver(message_update(GROUP, "mailing @gw_bot_fan about it"))
        assert fake.calls_to("sendMessage") == [] and fake.calls_to("sendChatAction") == []

        await served.deliver(message_update(GROUP, "@gw_bot, how are you"))
        await served.deliver(message_update(GROUP, "tell @GW_BOT hi"))
        await served.deliver(message_update(GROUP, "and you?", reply_to_bot=True))
        assert fake.texts(GROUP) == [
            'You said: "how are you"',  # the bot's own leading mention is not part of the input
            'You said: "tell @GW_BOT hi"',
            'You said: "and you?"',
        ]


async def test_commands_are_always_taken_unless_for_another_bot(
    telegram: Start, fake: FakeBotAPI
) -> None:
    async with telegram() as served:
        for text in ("/echo one", "/echo@gw_bot two", "/ECHO@GW_BOT three", "@gw_bot /echo four"):
            await served.deliver(message_update(GROUP, text))
        await served.deliver(message_update(GROUP, "/echo@other_bot five"))
        await served.deliver(message_update(PRIVATE, "/echo@other_bot six"))
        await served.deliver(message_update(GROUP, "/nope@other_bot"))
        assert fake.texts(GROUP) == ["one", "two", "three", "four"]
        assert fake.texts(PRIVATE) == []


async def test_all_group_text_when_configured(telegram: Start, fake: FakeBotAPI) -> None:
    async with telegram(telegram_group_text="all") as served:
        await served.deliver(message_update(GROUP, "just chatting"))
        assert fake.texts(GROUP) == ['You said: "just chatting"']


async def test_group_replies_quote_the_message_they_answer(
    telegram: Start, fake: FakeBotAPI
) -> None:
    async with telegram() as served:
        group = message_update(GROUP, "/echo in a group")
        private = message_update(PRIVATE, "/echo in private")
        await served.deliver(group)
        await served.deliver(private)
        [in_group] = fake.messages(GROUP)
        [in_private] = fake.messages(PRIVATE)
        assert in_group.reply_to == group["message"]["message_id"]
        assert in_private.reply_to is None


@pytest.mark.parametrize("thread", [None, 7])
async def test_a_forum_topic_is_its_own_conversation(
    telegram: Start, fake: FakeBotAPI, thread: int | None
) -> None:
    runtime = Scripted()
    # /new in a group is an owner's (docs/access.md).
    async with telegram(runtime, telegram_owners=[str(USER)]) as served:
        await served.deliver(message_update(GROUP, "/new", thread_id=thread))
        expected = f"{GROUP}:{thread}" if thread else str(GROUP)
        assert runtime.keys == [f"telegram:{expected}"]
        [answer] = fake.messages(GROUP)
        assert answer.thread_id == thread
        assert answer.text == "Started a new session."


async def test_opening_the_bot_shows_the_help(telegram: Start, fake: FakeBotAPI) -> None:
    async with telegram() as served:
        await served.deliver(message_update(PRIVATE, "/start"))
        [welcome] = fake.texts(PRIVATE)
        assert welcome.startswith("Gateway commands\n\n• /help — List commands")
