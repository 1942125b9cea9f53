"""Where the bot is and what it owes each room, under the real access defaults: a room of
the homeserver's default version can be allowed, a room an owner invites the bot to is
allowed, an allowed room's upgrade is allowed as it was (on the old room's tombstone, not on
the new room's word), a room's history before the bot joined is not answered, a "direct"
invitation to a room of several people is a group's, the bot leaves a room everyone else
left, and a kick stops the turn running in the room. Found by trying the channel as users
and strangers do.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mautrix.api import Method
from mautrix.api import Path as Path_
from mautrix.types import RoomCreatePreset, RoomID, UserID

from channels.matrix.invites import Invites
from contract import Command
from tests.access.cli import access, stored
from tests.telegram.helpers import Scripted

from .conftest import BOT, Outcomes, Start, channel_of
from .person import Person, person
from .synapse import Synapse
from .test_rooms import bob, group_room

pytestmark = pytest.mark.xdist_group("matrix")
__all__ = ["bob"]  # the fixture, used by name

MENTION = "m.mentions"


def mentioning(bot_id: str) -> dict[str, object]:
    return {MENTION: {"user_ids": [bot_id]}}


async def test_a_room_of_the_homeservers_default_version_can_be_allowed(
    matrix: Start, alice: Person, bob: Person, bot_id: str, tmp_path: Path
) -> None:
    # Rooms of version 12 (Synapse's default) have ids without a server part (!opaque).
    settings, cli = stored(tmp_path)
    async with matrix(**{**settings, "matrix_group_policy": "open"}):
        room = await group_room(alice, bob, bot=bot_id)
    assert ":" not in room  # the case this is about
    said = await access(cli, "allow", "matrix", room)
    assert (said.status, said.err) == (0, "")
    async with matrix(**settings):  # group_policy allowlist: the room is listed now
        asked = await bob.send(room, "/echo allowed", **mentioning(bot_id))
        await bob.shows(room, asked, bot_id, "allowed")


async def test_a_room_an_owner_invites_the_bot_to_is_allowed(
    matrix: Start, alice: Person, bob: Person, bot_id: str, tmp_path: Path
) -> None:
    settings, cli = stored(tmp_path)
    async with matrix(**settings, matrix_owners=[alice.me]):
        room = await group_room(alice, bob, bot=bot_id)
        asked = await bob.send(room, "/echo hello", **mentioning(bot_id))
        await bob.shows(room, asked, bot_id, "hello")
    # As if an operator had allowed it: revoked the same way.
    said = await access(cli, "revoke", "matrix", room)
    assert said.status == 0, said


# 120: more than a sync batch holds; the room comes `limited` with the bot's join, and what
# is read back before its timeline (``channels.matrix.gap``) is history all the same.
@pytest.mark.parametrize("chatter", [0, 120])
async def test_a_message_written_before_the_bot_joined_is_not_answered(
    matrix: Start, alice: Person, bob: Person, bot_id: str, chatter: int
) -> None:
    async with matrix():
        room = str(
            await alice.client.create_room(
                preset=RoomCreatePreset.PRIVATE, invitees=[UserID(bob.me)]
            )
        )
        await bob.join(room)
        await alice.until(lambda: alice.joined(room, bob.me))
        planted = await bob.send(room, "/echo planted", **mentioning(bot_id))
        for i in range(chatter):
            await bob.send(room, f"chatter {i}")
        await alice.client.invite_user(RoomID(room), UserID(bot_id))
        await alice.until(lambda: alice.joined(room, bot_id))
        asked = await alice.send(room, "/echo now", **mentioning(bot_id))
        await alice.shows(room, asked, bot_id, "now")
        assert alice.replies(room, planted, bot_id) == []


async def test_a_direct_invitation_to_a_room_of_several_people_is_a_groups(
    matrix: Start, alice: Person, bob: Person, bot_id: str, tmp_path: Path
) -> None:
    # A stranger (bob) under the defaults: direct invitations taken (pairing), rooms only
    # when allowed. "Direct" is the inviter's word; the room says otherwise.
    settings, _ = stored(tmp_path)
    async with matrix(**settings):
        room = str(
            await bob.client.create_room(
                preset=RoomCreatePreset.PRIVATE,
                invitees=[UserID(alice.me), UserID(bot_id)],
                is_direct=True,
            )
        )
        await alice.join(room)
        await bob.until(lambda: bob.left(room, bot_id))
        # A direct invitation that is one is still taken: the stranger gets a pairing code.
        direct = await bob.room_with(bot_id)
        asked = await bob.send(direct, "hello")
        told = await bob.reply(direct, asked, bot_id)
        assert "access approve matrix" in told["content"]["body"]


async def test_the_bot_leaves_a_room_everyone_else_left(
    matrix: Start, alice: Person, bot_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    left: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
    leave = Invites.leave

    async def spy(self: Invites, room_id: str, reason: str) -> None:
        await leave(self, room_id, reason)
        left.put_nowait((room_id, reason))

    monkeypatch.setattr(Invites, "leave", spy)
    async with matrix() as served:
        room = await alice.room_with(bot_id)
        asked = await alice.send(room, "/echo hi")
        await alice.shows(room, asked, bot_id, "hi")
        await alice.client.leave_room(RoomID(room))
        async with asyncio.timeout(30):
            assert await left.get() == (room, "everyone else left")
        client = channel_of(served).client
        assert client is not None and RoomID(room) not in await client.get_joined_rooms()


async def test_a_kick_stops_the_turn_running_in_the_room(
    matrix: Start, alice: Person, bob: Person, bot_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = Scripted(Command(name="work", description="Work"))
    async with matrix(runtime) as served:
        outcomes = Outcomes(served.gateway, monkeypatch)
        room = await group_room(alice, bob, bot=bot_id)  # the bot no moderator there
        asked = await alice.send(room, "/work", **mentioning(bot_id))
        await runtime.next_turn()  # running, and never ended by this test
        await alice.client.kick_user(RoomID(room), UserID(bot_id), reason="enough")
        _, outcome = await outcomes.of(asked)
        assert outcome.reply is not None and outcome.reply.stop_reason == "cancelled"


async def test_what_was_written_while_down_is_answered_after_a_profile_change(
    matrix: Start, synapse: Synapse, alice: Person, bot_id: str, tmp_path: Path
) -> None:
    # A new display name is a "join" after a join: not the bot's join, so not where the
    # room's history for the bot begins.
    kept = {"store": "sqlite", "state_path": str(tmp_path / "state.sqlite3")}
    async with matrix(**kept):
        room = await alice.room_with(bot_id)
        first = await alice.send(room, "/echo one")
        await alice.shows(room, first, bot_id, "one")
    down = await alice.send(room, "/echo while down")
    async with person(synapse.url, synapse.account(BOT)) as bot:
        await bot.client.set_displayname("gw bot, renamed")
    async with matrix(**kept):
        await alice.shows(room, down, bot_id, "while down")


async def test_an_upgraded_direct_room_is_the_persons_direct_room_again(
    matrix: Start, alice: Person, bot_id: str, tmp_path: Path
) -> None:
    # Element's /upgraderoom: the new room's invitation does not say "direct", and the group
    # policy (an allowlist, by default) would refuse it; the person's direct room goes on.
    settings, cli = stored(tmp_path)
    assert (await access(cli, "allow", "matrix", alice.me)).status == 0
    async with matrix(**settings):
        room = await alice.room_with(bot_id)
        first = await alice.send(room, "/echo before")
        await alice.shows(room, first, bot_id, "before")
        upgrade = Path_.v3.rooms[RoomID(room)].upgrade
        answer = await alice.client.api.request(Method.POST, upgrade, {"new_version": "12"})
        new = answer["replacement_room"]
        await alice.client.invite_user(RoomID(new), UserID(bot_id))
        await alice.until(lambda: alice.joined(new, bot_id) or alice.left(new, bot_id))
        assert alice.joined(new, bot_id), "the bot refused the upgraded direct room"
        asked = await alice.send(new, "/echo upgraded")  # no mention: a direct room
        await alice.shows(new, asked, bot_id, "upgraded")


async def test_an_allowed_room_upgraded_is_allowed_as_it_was(
    matrix: Start, alice: Person, bob: Person, bot_id: str, tmp_path: Path
) -> None:
    settings, cli = stored(tmp_path)
    async with matrix(**{**settings, "matrix_group_policy": "open"}):
        room = await group_room(bob, alice, bot=bot_id)  # bob's: he is its admin
    assert (await access(cli, "allow", "matrix", room)).status == 0
    async with matrix(**settings):  # allowlist, no owner: only the listed room is answered
        upgrade = Path_.v3.rooms[RoomID(room)].upgrade
        answer = await bob.client.api.request(Method.POST, upgrade, {"new_version": "12"})
        new = answer["replacement_room"]
        for invitee in (bot_id, alice.me):  # the new room is invite-only, as the old one
            await bob.client.invite_user(RoomID(new), UserID(invitee))
        await alice.join(new)
        await bob.until(lambda: bob.joined(new, bot_id) and bob.joined(new, alice.me))
        asked = await bob.send(new, "/echo upgraded", **mentioning(bot_id))
        await bob.shows(new, asked, bot_id, "upgraded")
        # A room that only says it replaces the allowed one (its creator's word) is not.
        claimed = await bob.client.create_room(
            preset=RoomCreatePreset.PRIVATE,
            invitees=[UserID(alice.me), UserID(bot_id)],
            creation_content={"predecessor": {"room_id": room}},
        )
        await bob.until(lambda: bob.left(str(claimed), bot_id))
