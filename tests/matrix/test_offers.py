"""What a direct room's published commands offer follows who is in it and what they are: an
owner-only command shows in an owner's direct room while it is one (no one else joined) and
while its person owns the bot (approved or revoked while the gateway runs), and a stranger's
direct room offers nothing until they are approved, as the room's state events (MSC4332) say
to its clients.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mautrix.types import RoomID, UserID

from channels.matrix.commands import MSC4332, MSC4391, msc4391_key
from tests.access.cli import access, stored

from .conftest import Start, publishing
from .person import Person
from .synapse import Synapse
from .test_rooms import bob

pytestmark = pytest.mark.xdist_group("matrix")
__all__ = ["bob"]  # the fixture, used by name


def offered(who: Person, room: str, bot: str) -> set[str] | None:
    """The commands the bot's latest list in ``room`` offers, as ``who`` was sent it; None
    before the first one.
    """
    lists = [e for e in who.timeline(room, bot) if e.get("type") == MSC4332]
    if not lists:
        return None
    return {c["syntax"].split()[0] for c in lists[-1]["content"].get("commands", [])}


def offers(who: Person, room: str, bot: str, command: str) -> bool:
    return command in (offered(who, room, bot) or ())


async def test_a_direct_room_offers_what_its_people_may_run_as_they_come_and_go(
    matrix: Start, alice: Person, bob: Person, bot_id: str
) -> None:
    # Menus leave out what a sender may not run (docs/access.md): an owner-only command is
    # offered in its owner's direct room, not in another person's.
    async with matrix(matrix_owner_commands=["slow"], matrix_owners=[alice.me]) as served:
        publishing(served)
        room = await alice.room_with(bot_id)
        others = await bob.room_with(bot_id)
        await alice.until(lambda: offers(alice, room, bot_id, "slow"))
        await bob.until(lambda: offers(bob, others, bot_id, "echo"))
        assert not offers(bob, others, bot_id, "slow")
        # Bob invited: a room of three, the owner's commands no longer offered there.
        await alice.client.invite_user(RoomID(room), UserID(bob.me))
        await alice.until(lambda: not offers(alice, room, bot_id, "slow"))
        assert offers(alice, room, bot_id, "echo")
        await bob.join(room)
        await bob.client.leave_room(RoomID(room))
        # Bob gone: the owner's direct room again.
        await alice.until(lambda: offers(alice, room, bot_id, "slow"))


async def test_a_direct_room_offers_the_owners_commands_while_its_person_owns_the_bot(
    matrix: Start, bob: Person, bot_id: str, tmp_path: Path
) -> None:
    settings, cli = stored(tmp_path)
    async with matrix(**settings, matrix_owner_commands=["slow"]) as served:
        publishing(served)
        room = await bob.room_with(bot_id)
        # Approved, then made an owner by the operator, in a process of its own: nothing
        # the room hears.
        said = await access(cli, "allow", "matrix", bob.me)
        assert said.status == 0, said
        await bob.until(lambda: offers(bob, room, bot_id, "echo"))
        assert not offers(bob, room, bot_id, "slow")
        said = await access(cli, "allow", "matrix", bob.me, "--owner")
        assert said.status == 0, said
        await bob.until(lambda: offers(bob, room, bot_id, "slow"))
        # Revoked: a stranger again, offered nothing.
        said = await access(cli, "revoke", "matrix", bob.me)
        assert said.status == 0, said
        await bob.until(lambda: offered(bob, room, bot_id) == set())


async def test_a_strangers_direct_room_offers_nothing_until_they_are_approved(
    matrix: Start, bob: Person, bot_id: str, tmp_path: Path
) -> None:
    # Under the default policy a stranger's direct invitation is taken so that they can ask
    # for a pairing code; what the agent can do is not theirs to see (nor a state event a
    # command written for every room they make).
    settings, cli = stored(tmp_path)
    async with matrix(**settings) as served:
        publisher = publishing(served).publisher
        assert publisher is not None
        rooms = [await bob.room_with(bot_id), await bob.room_with(bot_id)]
        asked = await bob.send(rooms[0], "hello")
        told = await bob.reply(rooms[0], asked, bot_id)
        assert "access approve matrix" in told["content"]["body"]
        for room in rooms:
            assert await publisher.inventory(room) == ()
        said = await access(cli, "allow", "matrix", bob.me)
        assert said.status == 0, said
        await bob.until(lambda: all(offers(bob, r, bot_id, "echo") for r in rooms))
        # Nothing was written before the approval: one list in each room, the approved one.
        for room in rooms:
            lists = [e for e in bob.timeline(room, bot_id) if e.get("type") == MSC4332]
            assert all(e["content"].get("commands") for e in lists), lists
            assert len(lists) == 1, lists


async def test_a_room_gets_its_whole_list_under_the_homeservers_rate_limit(
    matrix: Start, alice: Person, bot_id: str, synapse: Synapse
) -> None:
    # A state event a command: under a homeserver's default limit on the bot (Synapse's:
    # 0.17 a second, bursts of 10) the list of a bot that joins rooms is refused with 429s
    # part way. Each write waits its turn and is tried again; none is left out.
    synapse.limit(bot_id, 5, burst=2)
    try:
        async with matrix() as served:
            menu = publishing(served).gateway.menu()
            assert menu is not None and len(menu) > 2
            room = await alice.room_with(bot_id)
            keys = {msc4391_key(c.name, bot_id) for c in menu}

            def described() -> set[str]:
                events = alice.timeline(room, bot_id)
                return {e["state_key"] for e in events if e.get("type") == MSC4391}

            await alice.until(lambda: described() == keys, within=60)
            assert offered(alice, room, bot_id) == {c.name for c in menu}
    finally:
        synapse.limit(bot_id, None)
