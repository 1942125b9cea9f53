"""Groups: the final text of a streamed reply goes out in the first edit slot the per-chat
pacing allows, even when a preview (or the activity message) was waiting for that slot.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from contract import Command
from gateway.events import MessageDelta, MessageEnd, ToolStart

from .fake_bot_api import WAIT, FakeBotAPI
from .helpers import GROUP, Scripted, Served, Start, message_update

GO = Command(name="go", description="Go")
INTERVAL = 0.4
TOLERANCE = 0.15  # scheduling and the round trip to the fake; a lost slot costs INTERVAL


def count_waits(served: Served) -> Callable[[int], Awaitable[None]]:
    """Count the calls that ask the chat's pacing for a slot; the returned coroutine function
    waits until ``n`` have asked and taken their place in line.
    """
    throttle = served.channel.throttle
    original = throttle.wait
    asked = 0
    changed = asyncio.Condition()

    async def wait(key: str) -> None:
        nonlocal asked
        asked += 1
        async with changed:
            changed.notify_all()
        # The waiters run once this task yields, inside ``original``: in line by then.
        await original(key)

    async def until(n: int) -> None:
        async with changed:
            await asyncio.wait_for(changed.wait_for(lambda: asked >= n), WAIT)

    throttle.wait = wait  # type: ignore[method-assign]
    return until


async def test_the_final_edit_takes_the_slot_a_waiting_preview_had(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime, telegram_edit_interval=INTERVAL) as served:
        asked = count_waits(served)
        await served.post(message_update(GROUP, "/go"))
        turn = await runtime.next_turn()
        turn.emit(MessageDelta("one"))
        await fake.wait(lambda: fake.texts(GROUP) == ["one"])
        [placeholder] = fake.calls_to("sendMessage")
        turn.emit(MessageDelta(" two"))
        await asked(2)  # the next preview waits for the next slot
        turn.emit(MessageEnd())
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        assert fake.texts(GROUP) == ["one two"]
        [final] = fake.calls_to("editMessageText")
        assert INTERVAL * 0.9 <= final.at - placeholder.at <= INTERVAL + TOLERANCE


async def test_the_final_edit_is_not_held_up_by_the_activity_message(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime, telegram_edit_interval=INTERVAL) as served:
        asked = count_waits(served)
        await served.post(message_update(GROUP, "/go"))
        turn = await runtime.next_turn()
        turn.emit(ToolStart("t1", "Read app.py", "read"), MessageDelta("one"))
        await fake.wait(lambda: len(fake.messages(GROUP)) == 2)  # the activity, the placeholder
        last = max(call.at for call in fake.calls_to("sendMessage"))
        turn.emit(ToolStart("t2", "Run pytest", "execute"), MessageDelta(" two"))
        await asked(4)  # the activity's edit and the next preview both wait in line
        turn.emit(MessageEnd())
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        activity, reply = fake.messages(GROUP)
        assert reply.text == "one two" and "Run pytest" in activity.text
        final = next(
            call
            for call in fake.calls_to("editMessageText")
            if call.params["message_id"] == str(reply.message_id)
        )
        assert final.at - last <= INTERVAL + TOLERANCE
