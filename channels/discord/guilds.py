"""Guilds with commands of their own: a conversation whose inventory has commands the global
list lacks (dynamic ones) gets them as its guild's own list, which Discord shows beside the
global commands in that guild only.

Discord has one list per guild, not per channel: a guild's inventory is that of its
conversation that changed most recently. A conversation's first list is no change: it sets
the guild's list only while the guild has none of its own (else a first input in another
channel would take the guild's commands away from the channel that has them). A guild whose
inventory is back to the global list, or that falls out of the ``max_guilds`` most recently
changed ones, loses its own list. A guild's first list, when it is the global one, costs
nothing. With
``discord_guild_ids`` (no global list) a configured guild's own list is its whole
inventory, in place of the default one.

Interactions and plain messages tell which guild a channel belongs to (``seen``); a
conversation of a channel not seen in either is left to the global list.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from contract import Command

from .commands import MAX_COMMANDS, CommandList

log = logging.getLogger("slashgate.discord")

MAX_GUILDS = 100  # guild lists kept; each change of one costs a fetch and a bulk overwrite
MAX_CHANNELS = 10_000  # channels whose guild is remembered


@dataclass(frozen=True, slots=True)
class GuildList:
    inventory: tuple[Command, ...]
    own: CommandList  # what the guild's scope holds
    reading: CommandList  # how an invocation there is read: the global list with its own
    refused: tuple[str, ...]  # names Discord refuses here and not in the global list


class Guilds:
    def __init__(
        self,
        umbrella: str,
        configured: Sequence[int] = (),
        max_guilds: int = MAX_GUILDS,
        max_channels: int = MAX_CHANNELS,
    ) -> None:
        self.umbrella = umbrella
        self.configured = frozenset(configured)
        self.max_guilds = max_guilds
        self.max_channels = max_channels
        self.default = CommandList.build((), umbrella)
        self._channels: OrderedDict[str, int] = OrderedDict()  # channel -> its guild
        self._listed: set[str] = set()  # channels whose conversation gave a list
        self._lists: OrderedDict[int, GuildList] = OrderedDict()  # least recently changed first

    def seen(self, channel: str, guild: int | None) -> CommandList:
        """An input came from ``channel`` of ``guild`` (None: a DM): the list to read it
        with. The channel is remembered as the guild's, for its conversation's commands.
        """
        if guild is None:
            return self.default
        self._channels[channel] = guild
        self._channels.move_to_end(channel)
        while len(self._channels) > self.max_channels:
            self._listed.discard(self._channels.popitem(last=False)[0])
        found = self._lists.get(guild)
        return found.reading if found is not None else self.default

    def wanted(self, guild: int) -> CommandList | None:
        """What the guild's scope should hold; None: nothing (the global list shows)."""
        found = self._lists.get(guild)
        if found is not None:
            return found.own
        return self.default if guild in self.configured else None

    def changed(self, channel: str, inventory: tuple[Command, ...]) -> list[int]:
        """The conversation of ``channel`` lists ``inventory``: the guilds to publish."""
        guild = self._channels.get(channel)
        if guild is None:
            return []
        first = channel not in self._listed
        self._listed.add(channel)
        if first and guild in self._lists:
            return []  # no change: the guild keeps the list of the one that changed
        built = self._build(guild, inventory)
        before = self._lists.pop(guild, None)
        if built is None and before is None:
            return []  # the global list, as it was: nothing of its own, no call
        if built is not None:
            self._report(guild, built, before)
            self._lists[guild] = built
        publish = [guild]
        while len(self._lists) > self.max_guilds:
            oldest, _ = self._lists.popitem(last=False)
            publish.append(oldest)
        return publish

    def default_changed(self, default: CommandList) -> list[int]:
        """The default list is now ``default``: every guild's own list is made again beside
        it (a command may have joined the global list); the guilds to publish.
        """
        self.default = default
        publish = list(self._lists)
        for guild, before in list(self._lists.items()):
            built = self._build(guild, before.inventory)
            if built is None:
                del self._lists[guild]
            else:
                self._report(guild, built, before)
                self._lists[guild] = built
        return publish

    def _build(self, guild: int, inventory: tuple[Command, ...]) -> GuildList | None:
        """The guild's list for ``inventory``, or None when it is the default one."""
        if guild in self.configured:
            own = CommandList.build(inventory, self.umbrella)
            if frozenset(own.shapes) == frozenset(self.default.shapes):
                return None
            reading = own
        else:
            own = CommandList.build(inventory, self.umbrella, beside=self.default)
            if not own.builders:
                return None
            reading = self.default.beside(own)
        refused = tuple(n for n in own.refused if n not in self.default.refused)
        return GuildList(inventory, own, reading, refused)

    def _report(self, guild: int, built: GuildList, before: GuildList | None) -> None:
        if built.refused and (before is None or before.refused != built.refused):
            log.warning(
                "Discord cannot take these command names in guild %d (a-z, 0-9, - and _, at "
                "most 32, %d commands at most); they stay reachable as /%s <name>: %s",
                guild,
                MAX_COMMANDS,
                self.umbrella,
                ", ".join(built.refused),
            )
