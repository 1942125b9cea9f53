"""Autocomplete interactions answered from the contract's completion, as ``GET
/v1/complete`` answers it: the conversation's commands, within Discord's 3 seconds. The
choices are the asker's own: none for someone the access policy refuses, and no
owner-only command for anyone but an owner (docs/access.md).
"""

from __future__ import annotations

import asyncio

from hikari.impl.special_endpoints import AutocompleteChoiceBuilder

from contract import Command, complete, utf16_prefix
from gateway.api import GatewayAPI, InboundMessage

from .commands import ARGUMENTS, TEXT, CommandLists
from .wire import Called

MAX_CHOICES = 25
MAX_CHOICE = 100  # characters of a choice's name and of its value
COMMANDS_WAIT = 1.5  # seconds for the conversation's commands, then the menu's


class Completer:
    def __init__(
        self,
        gateway: GatewayAPI,
        channel: str,
        commands: CommandLists,
        interactive_only: list[str],
    ) -> None:
        self.gateway = gateway
        self.channel = channel
        self.commands = commands
        self.interactive_only = interactive_only

    async def choices(self, asked: Called) -> list[AutocompleteChoiceBuilder]:
        focused = next((o for o in asked.data.options or () if o.focused), None)
        if focused is None or focused.name not in (TEXT, ARGUMENTS):
            return []
        value = str(focused.value or "")
        guild = int(asked.guild_id) if asked.guild_id else None
        listing = self.commands(asked.channel_id, guild)
        name = asked.data.name
        if name == listing.umbrella:
            prefix = "" if value.startswith("/") else "/"
        else:
            prefix = f"/{listing.original.get(name, name)} "
        text = prefix + value
        sender = _sender(self.channel, asked)
        access = self.gateway.access
        if not await access.lets_talk(sender):
            return []  # someone the policy refuses learns nothing of the commands
        # What the sender may not run is not offered (owner-only commands).
        known = access.offered(sender, await self._commands(asked.channel_id))
        completion = complete(text, None, known, self.interactive_only, MAX_CHOICES)
        start, end = utf16_prefix(text, completion.start), utf16_prefix(text, completion.end)
        found = []
        for item in completion.items:
            chosen = (text[:start] + item.insert + text[end:])[len(prefix) :]
            label = (
                f"{item.insert.strip()} — {item.description}" if item.description else item.insert
            )
            if chosen and len(chosen) <= MAX_CHOICE:
                found.append(AutocompleteChoiceBuilder(name=label[:MAX_CHOICE], value=chosen))
        return found

    async def _commands(self, conversation: str) -> tuple[Command, ...]:
        try:
            return await asyncio.wait_for(
                # Shielded: a session being opened is left to open (and be released).
                asyncio.shield(self.gateway.commands(self.channel, conversation)),
                COMMANDS_WAIT,
            )
        except TimeoutError:  # the session is still opening: what everybody's menu has
            return await self.gateway.commands()


def _sender(channel: str, asked: Called) -> InboundMessage:
    """Who asks, and where, as the access policy reads an input (no text: nothing runs)."""
    guild = asked.guild_id
    return InboundMessage(
        channel=channel,
        conversation=asked.channel_id,
        user=asked.user_id,
        text="",
        direct=guild is None,
        groups=(asked.channel_id, guild) if guild else (asked.channel_id,),
    )
