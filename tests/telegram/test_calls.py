"""What a reply costs in Bot API calls and time: a one-line reply one call, whether it was
ready at once or showed as a preview first (the final text equal to the preview costs no
call); a reply in three messages goes in one burst at Telegram's own rates.
"""

from __future__ import annotations

import asyncio

from contract import Command
from gateway.events import MessageDelta, MessageEnd

from .fake_bot_api import WAIT, FakeBotAPI, Limits
from .helpers import GROUP, PRIVATE, Scripted, Start, message_update

GO = Command(name="go", description="Go")
COUNTED = ("sendMessage", "editMessageText", "sendMessageDraft")


def calls(fake: FakeBotAPI) -> dict[str, int]:
    return {method: len(fake.calls_to(method)) for method in COUNTED}


async def test_an_instant_one_line_reply_is_one_call(telegram: Start, fake: FakeBotAPI) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime) as served:
        for chat in (PRIVATE, GROUP):
            await served.post(message_update(chat, "/go"))
            turn = await runtime.next_turn()
            turn.emit(MessageDelta("done"), MessageEnd())
            await asyncio.wait_for(served.channel.intake.drain(), WAIT)
    assert calls(fake) == {"sendMessage": 2, "editMessageText": 0, "sendMessageDraft": 0}
    assert fake.texts(PRIVATE) == ["done"] and fake.texts(GROUP) == ["done"]


async def test_a_group_reply_its_preview_showed_already_costs_no_edit(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime, telegram_edit_interval=0.05) as served:
        await served.post(message_update(GROUP, "/go"))
        turn = await runtime.next_turn()
        turn.emit(MessageDelta("done"))
        await fake.wait(lambda: fake.texts(GROUP) == ["done"])  # the preview shows it all
        turn.emit(MessageEnd())
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
    assert calls(fake) == {"sendMessage": 1, "editMessageText": 0, "sendMessageDraft": 0}
    assert fake.texts(GROUP) == ["done"]


async def test_a_reply_in_three_messages_goes_in_one_burst(
    telegram: Start, fake: FakeBotAPI
) -> None:
    fake.enforce(Limits())  # Telegram's own figures, answered with 429 beyond them
    runtime = Scripted(GO)
    rates = {"telegram_rate_global": 30.0, "telegram_rate_private": 1.0}
    async with telegram(runtime, **rates) as served:
        await served.post(message_update(PRIVATE, "/go"))
        turn = await runtime.next_turn()
        turn.emit(MessageDelta("\n\n".join(["word " * 700] * 3)), MessageEnd())
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
    sent = fake.calls_to("sendMessage")
    assert len(sent) == 3 and fake.flooded() == []
    # One a second would take two seconds; the chat's short burst takes them at once.
    assert sent[-1].at - sent[0].at < 1.0
