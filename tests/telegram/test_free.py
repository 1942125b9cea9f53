"""Through aiogram against the fake Bot API: a conversation whose reply shows is free for the
next command at once, while other chats spend the bot's budget; what is left of the reply goes
on behind it (issue 33: "busy" only from a turn still running).
"""

from __future__ import annotations

import asyncio

from contract import Command
from gateway.events import MessageDelta, MessageEnd, UsageReported

from .fake_bot_api import WAIT, FakeBotAPI
from .helpers import GROUP, Scripted, ScriptedTurn, Start, message_update

GO = Command(name="go", description="Go")
CHATTY = (3001, 3002)  # private chats streaming: more previews than the bot's budget has
USAGE = UsageReported(input_tokens=10, output_tokens=2)


async def chatter(turn: ScriptedTurn, stop: asyncio.Event) -> None:
    while not stop.is_set():
        turn.emit(MessageDelta("more "))
        await asyncio.sleep(0.02)  # the agent's own pace
    turn.emit(MessageEnd())


async def test_the_next_command_after_a_visible_reply_runs_while_the_budget_is_spent(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    stop = asyncio.Event()
    # The bot's budget at 10 a second, which two streaming chats spend; the group at 60 a
    # minute (Telegram's 20 would make the test wait 3 s for its fourth message).
    rates = {"telegram_rate_global": 10.0, "telegram_rate_group": 60.0}
    async with telegram(runtime, telegram_edit_interval=0.05, **rates) as served:
        try:
            for chat in CHATTY:
                await served.post(message_update(chat, "/go", user_id=chat))
            chatty = [asyncio.create_task(chatter(await runtime.next_turn(), stop)) for _ in CHATTY]
            await fake.wait(lambda: len(fake.drafts) >= 2)
            for i in range(2):
                await served.post(message_update(GROUP, "/go"))
                await fake.wait(lambda: not runtime.turns.empty() or busy(fake))
                assert busy(fake) == [], "no command found the conversation busy"
                turn = await runtime.next_turn()
                turn.emit(MessageDelta(f"done {i}"))
                await fake.wait(lambda i=i: first_lines(fake)[-1:] == [f"done {i}"])
                # Its text shows: the turn ends, and what is left is its usage line (one more
                # edit, under the budgets); the next command at once.
                turn.emit(USAGE)
                turn.emit(MessageEnd())
        finally:
            stop.set()
        await asyncio.wait_for(asyncio.gather(*chatty), WAIT)
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
    assert first_lines(fake) == ["done 0", "done 1"]
    assert all(text.endswith("12 tokens (10 in, 2 out)") for text in fake.texts(GROUP))


def busy(fake: FakeBotAPI) -> list[str]:
    return [text for text in fake.texts(GROUP) if "busy" in text]


def first_lines(fake: FakeBotAPI) -> list[str]:
    return [text.partition("\n")[0] for text in fake.texts(GROUP)]
