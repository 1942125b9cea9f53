"""Publishing the command list: one bulk overwrite per scope (global, or each configured
guild), only when Discord's list differs from ours; names Discord refuses are reported once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import hikari

from contract import Command

from .commands import CommandList, Shape, shape

log = logging.getLogger("slashgate.discord")


class CommandSync:
    def __init__(
        self, rest: hikari.api.RESTClient, umbrella: str, guilds: Sequence[int] = ()
    ) -> None:
        self.rest = rest
        self.umbrella = umbrella
        self.guilds = tuple(guilds)
        self.commands = CommandList.build((), umbrella)
        self.application: int | None = None  # the bot's application, once fetched
        self._reported: tuple[str, ...] = ()
        self._lock = asyncio.Lock()

    def update(self, inventory: Sequence[Command]) -> None:
        """Rebuild the list from the effective inventory (host commands first)."""
        self.commands = CommandList.build(inventory, self.umbrella)
        refused = self.commands.refused
        if refused and refused != self._reported:
            log.warning(
                "Discord cannot take these command names (a-z, 0-9, - and _, at most 32, "
                "%d commands at most); they stay reachable as /%s <name>: %s",
                100,
                self.umbrella,
                ", ".join(refused),
            )
        self._reported = refused

    async def publish(self) -> int:
        """Overwrite each scope whose list differs from ours; how many were written."""
        async with self._lock:  # one publication at a time: the last list wins
            if self.application is None:
                self.application = int((await self.rest.fetch_application()).id)
            ours = frozenset(self.commands.shapes)
            written = 0
            for guild in self.guilds or (hikari.UNDEFINED,):
                current = await self.rest.fetch_application_commands(self.application, guild)
                if _shapes(current) == ours:
                    continue
                await self.rest.set_application_commands(
                    self.application, self.commands.builders, guild
                )
                written += 1
            if written:
                log.info("published %d Discord commands", len(self.commands.builders))
            return written


def _shapes(commands: Sequence[hikari.PartialCommand]) -> frozenset[Shape]:
    return frozenset(
        shape(c.name, getattr(c, "description", ""), getattr(c, "options", None))
        for c in commands
        if c.type == hikari.CommandType.SLASH
    )
