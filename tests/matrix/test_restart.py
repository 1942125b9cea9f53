"""Restarts: a message sent while the gateway is down is answered once after it starts (the
sync position was kept in the state store), and one that was journaled when the gateway was
SIGKILLed is answered after the restart (recovered from the journal).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from gateway.recovery import RESTARTED
from tests.conftest import OPEN_ENV
from tests.reliability.gateway_process import GatewayProcess

from .person import WAIT, Person, relates
from .synapse import Synapse

pytestmark = pytest.mark.xdist_group("matrix")


async def ready(url: str) -> None:
    """Until ``/readyz`` says the channel synced (polled: the process tells nothing else)."""
    async with aiohttp.ClientSession() as http, asyncio.timeout(WAIT):
        while True:
            async with http.get(f"{url}/readyz") as resp:
                if resp.status == 200:
                    return
            await asyncio.sleep(0.1)


def reactions(person: Person, room: str, event_id: str, bot: str) -> list[str]:
    """The ids of the bot's reactions on ``event_id``."""
    return [
        e["event_id"]
        for e in person.timeline(room, bot)
        if e["type"] == "m.reaction" and relates(e).get("event_id") == event_id
    ]


def redacted(person: Person, room: str, event_id: str, bot: str) -> bool:
    return any(
        e["type"] == "m.room.redaction"
        and event_id in (e.get("redacts"), e.get("content", {}).get("redacts"))
        for e in person.timeline(room, bot)
    )


async def test_nothing_is_lost_or_answered_twice_across_restarts(
    synapse: Synapse, alice: Person, bot_id: str, tmp_path: Path, bot_crypto: Path
) -> None:
    bot = synapse.account("gw_bot")
    gateway = GatewayProcess(
        {
            "matrix_homeserver": synapse.url,
            "matrix_access_token": bot.token,
            "matrix_edit_interval": "0.2",
            "store": "sqlite",
            "state_path": str(tmp_path / "state.sqlite3"),
            "matrix_crypto_path": str(bot_crypto),
            "inventory_wait": "0",
            **OPEN_ENV,
        }
    )
    try:
        await ready(await gateway.start())
        room = await alice.room_with(bot_id)
        first = await alice.send(room, "/echo one")
        await alice.shows(room, first, bot_id, "one")
        await gateway.stop()

        down = await alice.send(room, "/echo while down")
        await ready(await gateway.start())
        await alice.shows(room, down, bot_id, "while down")

        # A turn under way when the process is killed: journaled, answered after the restart
        # (by default with the failure that says so: `recovery = "notify"`).
        slow = await alice.send(room, "/slow 30")  # long enough to be running at the kill
        await alice.reply(room, slow, bot_id)  # its first line streams: it is running
        queued = await alice.send(room, "and this, meanwhile")
        [hourglass] = await alice.until(lambda: reactions(alice, room, queued, bot_id))
        await gateway.kill()
        await ready(await gateway.start())
        await alice.until(
            lambda: any(
                RESTARTED in str(alice.shown(room, r["event_id"]).get("body", ""))
                for r in alice.replies(room, slow, bot_id)
            )
        )
        # The queued one is answered after the restart, and its ⏳ taken off with the reply.
        await alice.reply(room, queued, bot_id)
        await alice.until(lambda: redacted(alice, room, hourglass, bot_id))
        after = await alice.send(room, "/echo after")
        await alice.shows(room, after, bot_id, "after")
        assert len(alice.replies(room, down, bot_id)) == 1  # the restart did not replay it
        assert len(alice.replies(room, first, bot_id)) == 1
    finally:
        await gateway.kill()
