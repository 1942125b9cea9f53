"""Invitations, accepted or refused by the channel's access policy: a direct invitation by
``dm_policy`` (``pairing`` and ``open`` accept anyone, as a stranger must reach the bot to get
a pairing code; ``allowlist`` only allowed users and owners; ``disabled`` no one), a room by
``group_policy`` (``open`` accepts any room; ``allowlist`` a listed or approved room, or any
room an owner invites it to; ``disabled`` none).
"""

from __future__ import annotations

import logging
from typing import Any

from mautrix.client import ClientAPI
from mautrix.errors import MatrixError
from mautrix.types import EventType, RoomID

from gateway.api import GatewayAPI, InboundMessage

from .rooms import Rooms
from .settings import MatrixSettings

log = logging.getLogger("slashgate.matrix")


def invitation(me: str, room: dict[str, Any]) -> tuple[str, bool, str | None] | None:
    """(the inviter, whether it is a direct chat, the room it replaces if it says so) from an
    invited room's stripped state.
    """
    events = room.get("invite_state", {}).get("events", [])
    found: tuple[str, bool] | None = None
    predecessor = None
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, dict):
            continue
        content = event.get("content")
        content = content if isinstance(content, dict) else {}
        if event.get("type") == "m.room.member" and event.get("state_key") == me:
            found = str(event.get("sender", "")), content.get("is_direct") is True
        elif event.get("type") == "m.room.create":
            before = content.get("predecessor")
            if isinstance(before, dict) and isinstance(before.get("room_id"), str):
                predecessor = before["room_id"]
    return None if found is None else (*found, predecessor)


class Invites:
    def __init__(
        self,
        client: ClientAPI,
        gateway: GatewayAPI,
        channel: str,
        settings: MatrixSettings,
        rooms: Rooms,
    ) -> None:
        self.client = client
        self.rooms = rooms
        self.gateway = gateway
        self.channel = channel
        self.settings = settings

    async def welcome(
        self, room_id: str, inviter: str, direct: bool, predecessor: str | None = None
    ) -> bool:
        """Whether the invitation is accepted (the room joined) or refused (left)."""
        allowed = await self.accepts(room_id, inviter, direct)
        if not allowed and predecessor:
            upgraded = await self.upgrade_of(room_id, predecessor, inviter)
            allowed = upgraded is not None
            direct = direct or upgraded == "direct"  # checked as a direct room below
        if not allowed:
            await self.leave(room_id, "not allowed here")
            log.info("refused the invitation to %s by %s", room_id, inviter)
            return False
        try:
            await self.client.join_room_by_id(RoomID(room_id))
        except MatrixError as exc:
            log.warning("could not join %s: %s", room_id, exc)
            return False
        # "Direct" is the inviter's word: a room with others in it is a group, whatever the
        # invitation said, and the group policy decides (a stranger's "direct" invitation to
        # a room of three got the bot into any room under the default policy).
        if direct and await self.rooms.others(room_id, inviter):
            if not await self.accepts(room_id, inviter, False):
                await self.leave(room_id, "not allowed here")
                log.info("left %s: invited as a direct chat by %s, a group", room_id, inviter)
                return False
        log.info("joined %s (invited by %s)", room_id, inviter)
        return True

    async def upgrade_of(self, room_id: str, predecessor: str, inviter: str) -> str | None:
        """Whether ``room_id`` replaces a room the inviter may talk in, as that room's own
        tombstone says (an admin's word there; a room's ``predecessor`` is its creator's
        word, which anyone can write): then it is allowed as the old room was. ``"direct"``
        for the inviter's direct room with the bot (Element's invitation to the new room
        does not say so; the direct message policy decides), ``"group"`` for an allowed
        group, None for neither.
        """
        try:
            tombstone = await self.client.get_state_event(
                RoomID(predecessor), EventType.ROOM_TOMBSTONE
            )
        except MatrixError:
            return None
        if getattr(tombstone, "replacement_room", None) != room_id:
            return None
        if await self.rooms.members(predecessor) == {self.rooms.me, inviter}:
            allowed = await self.accepts(room_id, inviter, True)
            kind = "direct"
        else:
            allowed = self.settings.matrix_group_policy == "allowlist" and (
                await self._lets_talk(predecessor, inviter, False)
            )
            kind = "group"
        if not allowed:
            return None
        if kind == "group":
            await self.gateway.access.allow_group(self.channel, room_id, inviter)
        log.info("%s replaces %s (upgraded): allowed as it was", room_id, predecessor)
        return kind

    async def leave(self, room_id: str, reason: str) -> None:
        """Leave the room (or refuse its invitation)."""
        self.rooms.left(room_id)
        try:
            await self.client.leave_room(RoomID(room_id), reason=reason)
        except MatrixError as exc:
            log.warning("could not leave %s: %s", room_id, exc)

    async def accepts(self, room_id: str, inviter: str, direct: bool) -> bool:
        settings = self.settings
        policy = settings.matrix_dm_policy if direct else settings.matrix_group_policy
        if policy == "disabled":
            return False
        if policy in ("open", "pairing"):
            return True
        access = self.gateway.access
        if await access.is_owner(self.channel, inviter):
            if not direct:  # the room the owner brought the bot to is allowed, or it is mute
                await access.allow_group(self.channel, room_id, inviter)
            return True
        return await self._lets_talk(room_id, inviter, direct)

    async def _lets_talk(self, room_id: str, user: str, direct: bool) -> bool:
        """Whether the access policy lets ``user`` talk in ``room_id`` (a room or a DM)."""
        asking = InboundMessage(
            channel=self.channel,
            conversation=room_id,
            user=user,
            text="",
            direct=direct,
            groups=() if direct else (room_id,),
        )
        return await self.gateway.access.lets_talk(asking)
