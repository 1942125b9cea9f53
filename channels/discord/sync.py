"""Publishing the command lists: one bulk overwrite per scope (global, or each configured
guild, and each guild with commands of its own: guilds.py), only when Discord's list
differs from ours; names Discord refuses are reported once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import hikari

from contract import Command

from .commands import MAX_COMMANDS, CommandList, Shape, shape
from .guilds import MAX_GUILDS, Guilds
from .messages import why

log = logging.getLogger("slashgate.discord")


class CommandSync:
    def __init__(
        self,
        rest: hikari.api.RESTClient,
        umbrella: str,
        guilds: Sequence[int] = (),
        max_guilds: int = MAX_GUILDS,
    ) -> None:
        self.rest = rest
        self.umbrella = umbrella
        self.guilds = tuple(guilds)
        self.scopes = Guilds(umbrella, self.guilds, max_guilds)
        self.application: int | None = None  # the bot's application, once fetched
        self._reported: tuple[str, ...] = ()
        self._pending: dict[int, None] = {}  # guilds whose lists to publish, in order
        self.failed: tuple[int, ...] = ()  # the guilds the last publish() could not write
        self._lock = asyncio.Lock()

    @property
    def commands(self) -> CommandList:
        """The default list: global (or each configured guild's)."""
        return self.scopes.default

    def update(self, inventory: Sequence[Command]) -> None:
        """Rebuild the list from the effective inventory (host commands first)."""
        commands = CommandList.build(inventory, self.umbrella)
        self._pending.update(dict.fromkeys(self.scopes.default_changed(commands)))
        refused = commands.refused
        if refused and refused != self._reported:
            log.warning(
                "Discord cannot take these command names (a-z, 0-9, - and _, at most 32, "
                "%d commands at most); they stay reachable as /%s <name>: %s",
                MAX_COMMANDS,
                self.umbrella,
                ", ".join(refused),
            )
        self._reported = refused

    def conversation_changed(self, channel: str, inventory: tuple[Command, ...]) -> bool:
        """The conversation of ``channel`` lists ``inventory``; True: a guild's list is to
        be published (``publish_guilds``).
        """
        guilds = self.scopes.changed(channel, inventory)
        self._pending.update(dict.fromkeys(guilds))
        return bool(guilds)

    async def publish(self) -> int:
        """Overwrite each scope whose list differs from ours; how many were written. A
        configured guild whose write fails is logged, the others are still written, and it
        is tried again at the next publication (``failed`` lists it until then). A global
        list Discord refuses is raised, once the guilds' own lists are written.
        """
        async with self._lock:  # one publication at a time: the last list wins
            written = 0
            failed: set[int] = set()
            refused: Exception | None = None
            await self._application()  # a refused token stops it all, said once
            for guild in self.guilds:
                try:
                    written += await self._write(guild, self.scopes.wanted(guild))
                except Exception as exc:  # this guild only: the others are still written
                    failed.add(guild)
                    self._failed(guild, exc)
            if not self.guilds:
                try:
                    written += await self._write(hikari.UNDEFINED, self.commands)
                except Exception as exc:  # the guilds' own lists still go
                    refused = exc
            if written:
                log.info("published %d Discord commands", len(self.commands.builders))
            # Not tried twice in this call: pending for the next one (publish_guilds too).
            written += await self._publish_guilds(failed)
            self._pending.update(dict.fromkeys(failed))
            self.failed = tuple(sorted(failed))
        if refused is not None:
            raise refused
        return written

    async def publish_guilds(self) -> int:
        """Overwrite the lists of the guilds whose commands changed, where they differ; a guild
        whose write fails is logged and stays pending for the next call.
        """
        async with self._lock:
            return await self._publish_guilds(set())

    async def _publish_guilds(self, failed: set[int]) -> int:
        """``publish_guilds`` under the lock; ``failed``: guilds not to try in this call."""
        written = 0
        while (guild := next((g for g in self._pending if g not in failed), None)) is not None:
            # Out before the write: a change during it puts the guild back.
            del self._pending[guild]
            wanted = self.scopes.wanted(guild)
            try:
                wrote = await self._write(guild, wanted)
            except Exception as exc:  # this guild only: the others are still written
                self._pending.setdefault(guild)
                failed.add(guild)
                self._failed(guild, exc)
                continue
            if wrote:
                written += 1
                count = len(wanted.builders) if wanted is not None else 0
                log.info("published %d Discord commands of guild %d", count, guild)
        return written

    @staticmethod
    def _failed(guild: int, exc: Exception) -> None:
        if isinstance(exc, hikari.HikariError):
            log.warning("publishing the Discord commands of guild %d failed: %s", guild, why(exc))
        else:  # an answer hikari could not read: with its traceback
            log.exception("publishing the Discord commands of guild %d failed", guild)

    async def _write(self, scope: hikari.UndefinedOr[int], commands: CommandList | None) -> int:
        """Overwrite ``scope`` with ``commands`` (None: none) unless Discord has them."""
        application = await self._application()
        builders = commands.builders if commands is not None else ()
        current = await self.rest.fetch_application_commands(application, scope)
        if _shapes(current) == frozenset(commands.shapes if commands is not None else ()):
            return 0
        await self.rest.set_application_commands(application, builders, scope)
        return 1

    async def _application(self) -> int:
        if self.application is None:
            self.application = int((await self.rest.fetch_application()).id)
        return self.application


def _shapes(commands: Sequence[hikari.PartialCommand]) -> frozenset[Shape]:
    return frozenset(
        shape(c.name, getattr(c, "description", ""), getattr(c, "options", None))
        for c in commands
        if c.type == hikari.CommandType.SLASH
    )
