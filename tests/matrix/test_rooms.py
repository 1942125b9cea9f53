"""What the bot answers in a room of several people (mentions, pills, threads), which
invitations it takes (the access policy), and the inventory it publishes to a room.
"""

from __future__ import annotations

from typing import Any

import pytest
from mautrix.api import Method, Path
from mautrix.types import RoomCreatePreset, RoomID, UserID

from channels.matrix.commands import MSC4332, MSC4391, msc4391_key

from .conftest import Start, publishing
from .person import Person, person, relates
from .synapse import Synapse

pytestmark = pytest.mark.xdist_group("matrix")


@pytest.fixture
async def bob(synapse: Synapse) -> Any:
    async with person(synapse.url, synapse.account("bob")) as who:
        yield who


async def group_room(alice: Person, *others: Person, bot: str | None = None, **options: Any) -> str:
    """A room of Alice, ``others`` and the bot, once they all joined (``options``: the
    room's creation's, as its power levels).
    """
    invitees = [UserID(o.me) for o in others] + ([UserID(bot)] if bot else [])
    room = str(
        await alice.client.create_room(
            preset=RoomCreatePreset.PRIVATE, invitees=invitees, **options
        )
    )
    for other in others:
        await other.join(room)
    await alice.until(lambda: all(alice.joined(room, o.me) for o in others))
    if bot:
        await alice.until(lambda: alice.joined(room, bot))
    return room


async def test_in_a_room_of_several_people_a_mention_addresses_the_bot(
    matrix: Start, alice: Person, bob: Person, bot_id: str
) -> None:
    async with matrix():
        room = await group_room(alice, bob, bot=bot_id)
        chatter = await alice.send(room, "/echo not for the bot")
        mentioned = await alice.send(room, "/echo one", **{"m.mentions": {"user_ids": [bot_id]}})
        pill = await alice.send(
            room,
            "gw_bot: /echo two",
            format="org.matrix.custom.html",
            formatted_body=f'<a href="https://matrix.to/#/{bot_id}">gw_bot</a>: /echo two',
        )
        threaded = await alice.send(
            room,
            "/echo three",
            **{
                "m.mentions": {"user_ids": [bot_id]},
                "m.relates_to": {"rel_type": "m.thread", "event_id": chatter},
            },
        )
        by_bob = await bob.send(room, "/echo four", **{"m.mentions": {"user_ids": [bot_id]}})

        await alice.shows(room, mentioned, bot_id, "one")
        await alice.shows(room, pill, bot_id, "two")
        in_thread = await alice.shows(room, threaded, bot_id, "three")
        assert relates(in_thread)["rel_type"] == "m.thread"
        assert relates(in_thread)["event_id"] == chatter
        await alice.shows(room, by_bob, bot_id, "four")
        assert alice.replies(room, chatter, bot_id) == []  # every later one was answered


async def test_invitations_follow_the_access_policy(
    matrix: Start, alice: Person, bob: Person, bot_id: str
) -> None:
    policy = {
        "matrix_dm_policy": "allowlist",
        "matrix_allow_users": [alice.me],
        "matrix_group_policy": "disabled",
    }
    async with matrix(**policy):
        # A stranger's direct invitation is refused: the bot never joins.
        refused = str(
            await bob.client.create_room(
                preset=RoomCreatePreset.TRUSTED_PRIVATE, invitees=[UserID(bot_id)], is_direct=True
            )
        )
        await bob.until(lambda: bob.left(refused, bot_id))
        assert not bob.joined(refused, bot_id)
        # A group is refused even when an allowed user invites the bot.
        group = str(
            await alice.client.create_room(
                preset=RoomCreatePreset.PRIVATE, invitees=[UserID(bot_id)]
            )
        )
        await alice.until(lambda: alice.left(group, bot_id))
        # The allowed user's direct invitation is taken, and the bot answers there.
        room = await alice.room_with(bot_id)
        asked = await alice.send(room, "/echo welcome")
        await alice.shows(room, asked, bot_id, "welcome")


async def room_state(who: Person, room: str) -> dict[tuple[str, str], dict[str, Any]]:
    events = await who.client.api.request(Method.GET, Path.v3.rooms[RoomID(room)].state)
    return {(e["type"], e.get("state_key", "")): e["content"] for e in events}


async def test_the_inventory_is_published_to_the_room_and_kept_current(
    matrix: Start, alice: Person, bot_id: str
) -> None:
    async with matrix() as served:
        publisher = publishing(served).publisher
        assert publisher is not None
        room = await alice.room_with(bot_id)
        key = (MSC4391, msc4391_key("echo", bot_id))
        await alice.until(
            lambda: any(e.get("state_key") == key[1] for e in alice.timeline(room, bot_id))
        )
        state = await room_state(alice, room)
        commands = {c["syntax"]: c for c in state[(MSC4332, bot_id)]["commands"]}
        assert state[(MSC4332, bot_id)]["sigil"] == "/"
        assert commands["echo {args}"]["description"] == {
            "m.text": [{"body": "Reply with exactly the given text"}]
        }
        assert "help" in commands and "cancel" in commands
        assert state[key]["command"] == "echo"
        assert state[key]["parameters"][0]["type"] == "string"

        # A command remembered in the room is published there; nothing else is written.
        asked = await alice.send(room, "/remember hi Hello!")
        await alice.shows(room, asked, bot_id, "Remembered /hi.")
        hi = (MSC4391, msc4391_key("hi", bot_id))
        await alice.until(
            lambda: any(e.get("state_key") == hi[1] for e in alice.timeline(room, bot_id))
        )
        assert (await room_state(alice, room))[hi]["command"] == "hi"
        assert await publisher.publish(room) == 0
