"""Who is in each room the bot is in, as sync tells it (member events in a room's state and
timeline), fetched once for a room the bot has not heard of since it started: a room of the
bot and one person is a direct conversation, where every message is for the bot. The bot's
own display name in each room comes with them (its member event there: the room's own name
for the bot, if it has one), as the room's people see it and write it.
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
        self._names: BoundedTTLMap[str] = BoundedTTLMap(MAX_ROOMS, FORGET_AFTER)

    def seen(self, room_id: str, event: dict[str, Any]) -> bool:
        """A state event of the room (its state block or its timeline). True when it may
        have changed who is in the room (someone joined, was invited, left; not a member's
        new display name): what the room offers may differ then.
        """
        user = event.get("state_key")
        if event.get("type") != "m.room.member" or not isinstance(user, str):
            return False
        content = event.get("content")
        content = content if isinstance(content, dict) else {}
        if user == self.me:
            self._name(room_id, content)
        members = self._members.get(room_id)
        if members is None:
            return True  # fetched whole when first needed
        present = content.get("membership") in PRESENT
        if present == (user in members):
            return False
        if present:
            members.add(user)
        else:
            members.discard(user)
        return True

    def _name(self, room_id: str, content: dict[str, Any]) -> None:
        name = content.get("displayname")
        if isinstance(name, str) and name:
            self._names.set(room_id, name)
        else:  # none: the room shows the bot's user id
            self._names.pop(room_id)

    def name(self, room_id: str) -> str | None:
        """The bot's display name in the room, as its member event there says (None: not
        known, or none).
        """
        return self._names.get(room_id)

    def left(self, room_id: str) -> None:
        self._members.pop(room_id)
        self._names.pop(room_id)

    async def members(self, room_id: str) -> set[str]:
        members = self._members.get(room_id)
        if members is None:
            path = Path.v3.rooms[RoomID(room_id)].members
            found = await self.client.api.request(
                Method.GET, path, query_params={"not_membership": "leave"}
            )
            members = set()
            for event in found.get("chunk", []):
                content = event.get("content") if isinstance(event, dict) else None
                if not isinstance(content, dict):
                    continue
                if content.get("membership") in PRESENT:
                    members.add(str(event.get("state_key")))
                if event.get("state_key") == self.me:
                    self._name(room_id, content)
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
