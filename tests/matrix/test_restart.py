"""Restarts: a message sent while the gateway is down is answered once after it starts (the
sync position was kept in the state store), also when more than a sync batch's hundred events
of a room came after it (the gap read back, up to its cap; in an encrypted room too, and
between two syncs of a running bot), and one that was journaled when the gateway was
SIGKILLed is answered after the restart (recovered from the journal).
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from channels.matrix import gap, sync
from gateway.recovery import RESTARTED
from tests.conftest import OPEN_ENV
from tests.reliability.gateway_process import GatewayProcess

from .conftest import Served, Start, channel_of
from .person import ENCRYPTION, WAIT, Person, person, relates
from .synapse import Synapse
from .test_rooms import bob, group_room

pytestmark = pytest.mark.xdist_group("matrix")
__all__ = ["bob"]  # the fixture, used by name


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


class Downtime:
    """A room of alice, bob and the bot, and the gateway started on one state store: what
    is written in the room while it is down comes after a restart.
    """

    def __init__(self, matrix: Start, alice: Person, bob: Person, bot: str, state: Path) -> None:
        self.matrix = matrix
        self.alice = alice
        self.bob = bob
        self.bot = bot
        self.state = state
        self.room = ""

    def gateway(self) -> AbstractAsyncContextManager[Served]:
        return self.matrix(store="sqlite", state_path=str(self.state))

    async def ask(self, text: str) -> str:
        """Alice's ``/echo text`` to the bot; its event id, once the bot answered it."""
        asked = await self.alice.send(
            self.room, f"/echo {text}", **{"m.mentions": {"user_ids": [self.bot]}}
        )
        await self.alice.shows(self.room, asked, self.bot, text)
        return asked

    async def command_then(self, chatter: int) -> str:
        """The room; while the gateway is down, ``command_in_a_flood(chatter)``."""
        async with self.gateway():
            self.room = await group_room(self.alice, self.bob, bot=self.bot)
            await self.ask("up")
        return await self.command_in_a_flood(chatter)

    async def command_in_a_flood(self, chatter: int) -> str:
        """Alice's ``/echo early`` to the bot, then ``chatter`` messages of bob's; the
        command's event id.
        """
        early = await self.alice.send(
            self.room, "/echo early", **{"m.mentions": {"user_ids": [self.bot]}}
        )
        for i in range(chatter):
            await self.bob.send(self.room, f"chatter {i}")
        return early

    def answers(self, event_id: str) -> list[dict[str, Any]]:
        return self.alice.replies(self.room, event_id, self.bot)


@pytest.fixture
def downtime(matrix: Start, alice: Person, bob: Person, bot_id: str, tmp_path: Path) -> Downtime:
    return Downtime(matrix, alice, bob, bot_id, tmp_path / "state.sqlite3")


# Past 100 events in a room, sync hands over the latest ones only (`limited`): the command
# before them is read back from the room. 10: a batch holds them all.
@pytest.mark.parametrize("chatter", [10, 120, 250])
async def test_a_command_followed_by_more_than_a_sync_batch_while_down_is_answered_once(
    downtime: Downtime, chatter: int
) -> None:
    early = await downtime.command_then(chatter)
    async with downtime.gateway():
        await downtime.alice.shows(downtime.room, early, downtime.bot, "early")
    async with downtime.gateway():  # a restart does not answer it again
        await downtime.ask("late")
    assert len(downtime.answers(early)) == 1


async def test_a_gap_that_could_not_be_read_comes_again(
    downtime: Downtime, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    early = await downtime.command_then(120)
    failures = []

    async def failing_once(*args: Any) -> list[dict[str, Any]]:
        if not failures:
            failures.append(args)
            raise OSError("connection reset")
        return await gap.missed(*args)

    monkeypatch.setattr(sync, "missed", failing_once)
    caplog.set_level(logging.WARNING, "slashgate.matrix")
    async with downtime.gateway():
        await downtime.alice.shows(downtime.room, early, downtime.bot, "early")
    assert failures
    assert "sync failed: OSError: connection reset" in caplog.text


async def test_past_the_cap_the_oldest_of_a_gap_are_left_out_with_a_log_line(
    downtime: Downtime, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    early = await downtime.command_then(160)
    monkeypatch.setattr(gap, "CAP", 50)  # the gap: the command and 60 of the chatter
    caplog.set_level(logging.WARNING, "slashgate.matrix")
    async with downtime.gateway():
        await downtime.ask("late")
    assert f"{downtime.room}: more than 50 events since the last sync" in caplog.text
    assert downtime.answers(early) == []


async def test_in_an_encrypted_room_the_gap_is_read_and_decrypted(
    matrix: Start, synapse: Synapse, bot_id: str, tmp_path: Path
) -> None:
    state = {"store": "sqlite", "state_path": str(tmp_path / "state.sqlite3")}
    async with person(synapse.url, synapse.account("alice"), encrypted=True) as alice:
        async with matrix(**state):
            room = await alice.room_with(bot_id, initial_state=[ENCRYPTION])
            up = await alice.send(room, "/echo up")
            await alice.shows(room, up, bot_id, "up")
        early = await alice.send(room, "/echo early")
        for i in range(120):  # not for the bot, though in its direct room: no message
            await alice.send_raw(room, "org.example.chatter", {"n": i})
        async with matrix(**state):
            await alice.shows(room, early, bot_id, "early")
        assert early in alice.sealed


async def test_a_flood_between_two_syncs_of_a_running_bot_loses_no_command(
    downtime: Downtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with downtime.gateway() as served:
        downtime.room = await group_room(downtime.alice, downtime.bob, bot=downtime.bot)
        await downtime.ask("up")
        # The bot's sync held on its next batch while the room fills with more than a batch.
        channel = channel_of(served)
        assert channel.sync is not None
        handle, held, go_on = channel.sync.handle, asyncio.Event(), asyncio.Event()

        async def holding(data: dict[str, Any], since: str | None) -> None:
            held.set()
            await go_on.wait()
            await handle(data, since)

        monkeypatch.setattr(channel.sync, "handle", holding)
        await downtime.bob.send(downtime.room, "chatter")
        await held.wait()
        early = await downtime.command_in_a_flood(120)
        go_on.set()
        await downtime.alice.shows(downtime.room, early, downtime.bot, "early")
