"""Who is in each room the bot is in, as sync tells it (member events in a room's state and
timeline), fetched once for a room the bot has not heard of since it started: a room of the
bot and one person is a direct conversation, where every message is for the bot.
"""

from __future__ import annotations

from typing import Any

from mautrix.api import Method, Path
from mautrix.client import ClientAPI
from mautrix.types import RoomID

from gateway.store import BoundedTTLMap

PRESENT = ("join", "invite")
MAX_ROOMS = 10_000  # rooms remembered; one forgotten is fetched again when it speaks
FORGET_AFTER = 7 * 24 * 3600.0


class Rooms:
    def __init__(self, client: ClientAPI, me: str) -> None:
        self.client = client
        self.me = me
        self._members: BoundedTTLMap[set[str]] = BoundedTTLMap(MAX_ROOMS, FORGET_AFTER)

    def seen(self, room_id: str, event: dict[str, Any]) -> None:
        """A state event of the room (its state block or its timeline)."""
        if event.get("type") != "m.room.member":
            return
        members = self._members.get(room_id)
        user = event.get("state_key")
        if members is None or not isinstance(user, str):
            return  # fetched whole when first needed
        content = event.get("content")
        membership = content.get("membership") if isinstance(content, dict) else None
        if membership in PRESENT:
            members.add(user)
        else:
            members.discard(user)

    def left(self, room_id: str) -> None:
        self._members.pop(room_id)

    async def members(self, room_id: str) -> set[str]:
        members = self._members.get(room_id)
        if members is None:
            path = Path.v3.rooms[RoomID(room_id)].members
            found = await self.client.api.request(
                Method.GET, path, query_params={"not_membership": "leave"}
            )
            members = {
                str(e.get("state_key"))
                for e in found.get("chunk", [])
                if isinstance(e, dict) and e.get("content", {}).get("membership") in PRESENT
            }
            self._members.set(room_id, members)
        return members

    async def others(self, room_id: str, person: str) -> set[str]:
        """Who is in the room (joined or invited) besides the bot and ``person``, as the
        homeserver answers now.
        """
        self._members.pop(room_id)
        return await self.members(room_id) - {self.me, person}

    def alone(self, room_id: str) -> bool:
        """Whether the bot is known to be the room's only member left."""
        return self._members.get(room_id) == {self.me}

    async def direct(self, room_id: str) -> bool:
        """The room has the bot and one person (joined or invited), no one else."""
        members = await self.members(room_id)
        return len(members) == 2 and self.me in members
