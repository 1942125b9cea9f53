"""The order in which the command lists go out: a room the bot just joined does not wait behind
a start-up's pass over every room it is in (at a homeserver's rate limit, each room's dozen
state events take seconds). The homeserver's side is a stand-in here: the room's state reads
empty and each write waits until the test lets it through.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from channels.matrix.commands import Publisher
from contract import Command

BOT = "@bot:hs"
COMMANDS = (Command(name="echo", description="Echo"), Command(name="help", description="Help"))


async def test_a_room_that_changed_last_is_published_before_the_rest_of_a_running_pass() -> None:
    writes: list[str] = []
    wrote, through, all_written = asyncio.Event(), asyncio.Event(), asyncio.Event()
    backlog = [f"!old{n}:hs" for n in range(5)]
    expected = (len(COMMANDS) + 1) * (len(backlog) + 1)  # MSC4332's event and one a command

    async def read_state(method: Any, path: Any) -> list[dict[str, Any]]:
        return []  # the room holds no list yet

    async def inventory(room: str) -> tuple[Command, ...]:
        return COMMANDS

    async def write(room: str, kind: str, state_key: str, content: dict[str, Any]) -> None:
        writes.append(room)
        wrote.set()
        if len(writes) == expected:
            all_written.set()
        await through.wait()  # the homeserver's pace, as the test sets it

    client = SimpleNamespace(api=SimpleNamespace(request=read_state))
    publisher = Publisher(client, BOT, inventory, write)  # type: ignore[arg-type]
    publisher.debounce = 0.0
    publisher.changed(backlog)  # the start-up: every room the bot is in
    await asyncio.wait_for(wrote.wait(), 5)
    publisher.changed(["!new:hs"])  # joined while the pass is under way
    for _ in range(100):  # its debounce (0 s) runs out on a pass of the loop
        if "!new:hs" not in publisher._due:
            break
        await asyncio.sleep(0)
    through.set()
    await asyncio.wait_for(all_written.wait(), 5)
    order = list(dict.fromkeys(writes))
    assert order.index("!new:hs") == 1, order  # right after the room being written
    assert sorted(order) == sorted([*backlog, "!new:hs"])
    await publisher.aclose()
