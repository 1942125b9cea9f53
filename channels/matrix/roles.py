"""Whom each direct room's published commands were made for: an owner's direct room offers
the owner-only commands, anyone else's does not. An owner approved or revoked while the
gateway runs (``/pair``, ``slashgate access``, another replica) makes no event the channel
hears, so the owner status each direct room's list was made for is looked at again every few
seconds (the access book as read within the second: one store read a look), and the rooms
whose person gained or lost it are published again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Container

log = logging.getLogger("slashgate.matrix")

EVERY = 5.0  # seconds between two looks at the owners


class Roles:
    def __init__(self, is_owner: Callable[[str], Awaitable[bool]]) -> None:
        self.is_owner = is_owner
        self.every = EVERY
        self._made_for: dict[str, tuple[str, bool]] = {}  # direct room -> (person, owner)

    async def owner(self, room: str, person: str) -> bool:
        """Whether ``person``, the other member of the direct room ``room``, owns the bot
        now; what the room's list is made for, remembered.
        """
        owner = await self.is_owner(person)
        self._made_for[room] = (person, owner)
        return owner

    def shared(self, room: str) -> None:
        """``room`` is not a direct room (any more): its list is everyone's."""
        self._made_for.pop(room, None)

    async def changed(self, known: Container[str]) -> list[str]:
        """The direct rooms whose person gained or lost ownership since their list was
        made; the rooms the bot is no longer in (not ``known``) are forgotten.
        """
        found = []
        for room, (person, owner) in list(self._made_for.items()):
            if room not in known:
                self._made_for.pop(room, None)
            elif await self.is_owner(person) != owner:
                found.append(room)
        return found

    async def watch(self, known: Container[str], publish: Callable[[list[str]], None]) -> None:
        """Look every ``every`` seconds, until cancelled; ``publish`` the rooms that moved."""
        while True:
            await asyncio.sleep(self.every)
            try:
                moved = await self.changed(known)
            except Exception:  # a bug here must not end the looks for good
                log.exception("the owners of direct rooms could not be looked at")
                continue
            if moved:
                publish(moved)
