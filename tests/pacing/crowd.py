"""Many conversations streaming at once through the real Telegram channel, against the fake Bot
API enforcing Telegram's limits: what the test asserts and bench/pacing.py reports.
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import dataclass

from contract import Command
from gateway.events import MessageDelta, MessageEnd
from tests.telegram.fake_bot_api import LIMITED, FakeBotAPI, Limits
from tests.telegram.helpers import Scripted, ScriptedTurn, Start, message_update

GO = Command(name="go", description="Go")
WAIT = 120.0  # seconds: the whole crowd at Telegram's own rates takes about 20


@dataclass
class Figures:
    conversations: int
    delivered: int  # final replies as the runtime wrote them
    calls: int  # the calls the limits count (sendMessage, editMessageText, sendMessageDraft)
    flooded: int  # of which refused with 429
    median: float  # seconds from the end of a turn to its final reply in the chat
    worst: float

    @property
    def flood_share(self) -> float:
        return self.flooded / self.calls if self.calls else 0.0

    def line(self) -> str:
        return (
            f"{self.conversations} conversations: {self.delivered} final replies delivered, "
            f"{self.calls} counted calls, {self.flooded} 429s ({self.flood_share:.2%}), "
            f"final reply after the turn's end: median {self.median:.2f} s, "
            f"worst {self.worst:.2f} s ({self.worst / self.median:.1f}x the median)"
        )


def chats(conversations: int, groups: int) -> list[int]:
    """Private chats (positive ids) and groups (negative)."""
    return [2000 + i for i in range(conversations - groups)] + [-5000 - i for i in range(groups)]


async def crowd(
    telegram: Start,
    fake: FakeBotAPI,
    *,
    conversations: int = 200,
    groups: int = 40,
    scale: float = 10.0,
    stream_for: float = 1.0,
    pieces: int = 10,
    paced: bool = True,
) -> Figures:
    """Every conversation asks at once; each turn streams ``pieces`` deltas over
    ``stream_for`` seconds, then ends. Telegram's limits and the gateway's (and the edit
    interval) are multiplied by ``scale``; ``paced=False`` turns the gateway's limits off.
    """
    runtime = Scripted(GO)
    fake.enforce(Limits(scale=scale))
    on = 1.0 if paced else 0.0  # 0: the gateway's pacing off (a baseline for the bench)
    rates = {
        "telegram_rate_global": 30.0 * scale * on,
        "telegram_rate_private": 1.0 * scale * on,
        "telegram_rate_group": 20.0 * scale * on,
        "telegram_edit_interval": 1.0 / scale,
    }
    ended: dict[int, float] = {}
    loop = asyncio.get_running_loop()

    async def stream(turn: ScriptedTurn) -> None:
        chat = int(turn.turn.args)  # "/go <chat>"
        for i in range(pieces):
            turn.emit(MessageDelta(f"piece {i} of chat {chat}. "))
            await asyncio.sleep(stream_for / pieces)  # the agent's own pace
        ended[chat] = loop.time()
        turn.emit(MessageEnd())

    async with telegram(runtime, **rates) as served:
        everyone = chats(conversations, groups)
        await asyncio.gather(*(served.post(message_update(c, f"/go {c}")) for c in everyone))
        turns = [await runtime.next_turn() for _ in everyone]
        await asyncio.wait_for(asyncio.gather(*(stream(t) for t in turns)), WAIT)
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
    return _figures(fake, everyone, ended, pieces)


def _figures(
    fake: FakeBotAPI, everyone: list[int], ended: dict[int, float], pieces: int
) -> Figures:
    delays = []
    delivered = 0
    for chat in everyone:
        final = "".join(f"piece {i} of chat {chat}. " for i in range(pieces)).strip()
        if fake.texts(chat)[-1:] == [final]:
            delivered += 1
        landed = [
            call.at
            for call in fake.calls
            if call.method in ("sendMessage", "editMessageText")
            and call.params.get("chat_id") == str(chat)
            and call.params.get("text") == final
        ]
        if landed:
            delays.append(max(landed) - ended[chat])
    counted = sum(1 for call in fake.calls if call.method in LIMITED)
    return Figures(
        conversations=len(everyone),
        delivered=delivered,
        calls=counted,
        flooded=len(fake.flooded()),
        median=statistics.median(delays),
        worst=max(delays),
    )
