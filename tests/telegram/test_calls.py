"""What a one-line reply costs in Bot API calls: one, whether it was ready at once or showed
as a preview first (the final text equal to the preview costs no call).
"""

from __future__ import annotations

import asyncio

from contract import Command
from gateway.events import MessageDelta, MessageEnd

from .fake_bot_api import WAIT, FakeBotAPI
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
