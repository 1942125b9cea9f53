"""Whom each direct room's published commands were made for: an owner's direct room offers
the owner-only commands, an approved person's the others, a stranger's none (a stranger who
may not talk is told how to pair, never what the agent can do). An owner or a person approved
or revoked while the gateway runs (``/pair``, ``slashgate access``, another replica) makes no
event the channel hears, so the standing each direct room's list was made for is looked at
again every few seconds (the access book as read within the second: one store read a look),
and the rooms whose person's standing moved are published again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Container
from typing import NamedTuple

log = logging.getLogger("slashgate.matrix")

EVERY = 5.0  # seconds between two looks at the people of direct rooms


class Standing(NamedTuple):
    """What a direct room's person may do: talk to the bot at all, and run what owners run."""

    talks: bool
    owns: bool


class Roles:
    def __init__(self, standing: Callable[[str, str], Awaitable[Standing]]) -> None:
        self.standing = standing  # (room, person) -> their standing now
        self.every = EVERY
        self._made_for: dict[str, tuple[str, Standing]] = {}  # direct room -> (person, ...)

    async def of(self, room: str, person: str) -> Standing:
        """The standing of ``person``, the other member of the direct room ``room``, now;
        what the room's list is made for, remembered.
        """
        standing = await self.standing(room, person)
        self._made_for[room] = (person, standing)
        return standing

    def shared(self, room: str) -> None:
        """``room`` is not a direct room (any more): its list is everyone's."""
        self._made_for.pop(room, None)

    async def changed(self, known: Container[str]) -> list[str]:
        """The direct rooms whose person's standing moved since their list was made; the
        rooms the bot is no longer in (not ``known``) are forgotten.
        """
        found = []
        for room, (person, standing) in list(self._made_for.items()):
            if room not in known:
                self._made_for.pop(room, None)
            elif await self.standing(room, person) != standing:
                found.append(room)
        return found

    async def watch(self, known: Container[str], publish: Callable[[list[str]], None]) -> None:
        """Look every ``every`` seconds, until cancelled; ``publish`` the rooms that moved."""
        while True:
            await asyncio.sleep(self.every)
            try:
                moved = await self.changed(known)
            except Exception:  # a bug here must not end the looks for good
                log.exception("the people of direct rooms could not be looked at")
                continue
            if moved:
                publish(moved)
