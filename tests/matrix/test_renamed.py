"""The bot renamed while the gateway runs (its display name, or a name of its own in one room,
as ``/myroomnick`` sets it): a pill with the new name, as a client writes it (the name, a
colon, the command), is a command for the bot at once.
"""

from __future__ import annotations

import html
from typing import Any

import pytest
from mautrix.api import Method, Path
from mautrix.types import RoomID

from .conftest import Start, channel_of
from .person import Person
from .test_rooms import bob, group_room

pytestmark = pytest.mark.xdist_group("matrix")
__all__ = ["bob"]  # the fixture, used by name


def pill(bot_id: str, name: str, rest: str) -> dict[str, Any]:
    """What Element sends for a pill to the bot followed by ``rest``."""
    link = f'<a href="https://matrix.to/#/{bot_id}">{html.escape(name)}</a>'
    return {
        "msgtype": "m.text",
        "body": f"{name}: {rest}",
        "format": "org.matrix.custom.html",
        "formatted_body": f"{link}: {html.escape(rest)}",
        "m.mentions": {"user_ids": [bot_id]},
    }


async def answered_by(who: Person, room: str, bot_id: str, name: str) -> None:
    """Once ``who`` saw the bot take ``name``: a pill with it and ``/echo`` is run."""
    await who.until(
        lambda: any(
            e.get("type") == "m.room.member" and e.get("content", {}).get("displayname") == name
            for e in who.timeline(room, bot_id)
        )
    )
    asked = await who.send_raw(room, "m.room.message", pill(bot_id, name, f"/echo {name}"))
    await who.shows(room, asked, bot_id, name)


async def test_a_pill_with_the_bots_new_name_is_a_command_for_it_at_once(
    matrix: Start, alice: Person, bob: Person, bot_id: str
) -> None:
    async with matrix() as served:
        client = channel_of(served).client
        assert client is not None
        before = await client.get_displayname(client.mxid)
        room = await group_room(alice, bob, bot=bot_id)
        try:
            await client.set_displayname("Renamed & Bot")
            await answered_by(alice, room, bot_id, "Renamed & Bot")
            # A name of its own in this room.
            mine = {"membership": "join", "displayname": "Room Nick"}
            path = Path.v3.rooms[RoomID(room)].state["m.room.member"][bot_id]
            await client.api.request(Method.PUT, path, mine)
            await answered_by(alice, room, bot_id, "Room Nick")
        finally:
            await client.set_displayname(before or bot_id)
