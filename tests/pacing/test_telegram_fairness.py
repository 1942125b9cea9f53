"""Through the Telegram channel: a chatty conversation does not hold up another's final reply,
and a 429's Retry-After pauses its chat only (the retry comes no sooner; other chats go on).
"""

from __future__ import annotations

import asyncio

from gateway.events import MessageDelta, MessageEnd
from tests.telegram.fake_bot_api import WAIT, FakeBotAPI
from tests.telegram.helpers import Scripted, Start, message_update

from .crowd import GO

CHATTY, QUIET = 4001, 4002


async def test_a_chatty_conversation_does_not_hold_up_another_final_reply(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    # The bot's budget is the only limit (20 a second): the chatty reply's 30 messages take
    # a second and a half, one at a time.
    limits = {"telegram_rate_global": 20.0, "telegram_rate_private": 0.0}
    paragraphs = [f"Paragraph {i}. " + "lorem ipsum " * 300 for i in range(30)]
    async with telegram(runtime, **limits) as served:
        await served.post(message_update(CHATTY, "/go"))
        chatty = await runtime.next_turn()
        chatty.emit(MessageDelta("\n\n".join(paragraphs)), MessageEnd())
        await fake.wait(lambda: len(fake.texts(CHATTY)) >= 2)  # its reply is going out
        await served.post(message_update(QUIET, "/go"))
        quiet = await runtime.next_turn()
        quiet.emit(MessageDelta("short and sweet"), MessageEnd())
        await fake.wait(lambda: fake.texts(QUIET) == ["short and sweet"])
        during = len(fake.texts(CHATTY))
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
    assert len(fake.texts(CHATTY)) == 30
    assert during <= 5  # the quiet reply went within a slot or two of asking, not after 30


async def test_retry_after_pauses_its_chat_and_not_the_others(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    fake.inject(
        "sendMessage", 429, "Too Many Requests: retry after 1", parameters={"retry_after": 1},
        when=lambda params: params.get("chat_id") == str(CHATTY),
    )  # fmt: skip
    async with telegram(runtime) as served:
        await served.post(message_update(CHATTY, "/go"))
        turn = await runtime.next_turn()
        turn.emit(MessageDelta("after the pause"), MessageEnd())
        await fake.wait(lambda: fake.flooded() == ["sendMessage"])
        await served.post(message_update(QUIET, "/go"))
        turn = await runtime.next_turn()
        turn.emit(MessageDelta("no pause here"), MessageEnd())
        await fake.wait(lambda: fake.texts(CHATTY) == ["after the pause"])
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
    refused, retried = [c for c in fake.calls_to("sendMessage") if c.params["chat_id"] == "4001"]
    [other] = [c for c in fake.calls_to("sendMessage") if c.params["chat_id"] == "4002"]
    assert retried.at - refused.at >= 1.0  # as Telegram said
    assert other.at < retried.at  # the other chat was not paused
    assert fake.texts(QUIET) == ["no pause here"]
