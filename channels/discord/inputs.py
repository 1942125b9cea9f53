"""What the Discord channel does with a command interaction: journal it (its id is the claim:
a replayed delivery runs once) before Discord is answered, then run it in the background
with its sink, telling its user once when it fails or the channel stops first.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

import aiohttp
import hikari

from gateway.answering import handle_once
from gateway.attachments import AttachmentError
from gateway.inbound import InboundMessage, ReplySink
from gateway.state import Entry
from gateway.tasks import BackgroundTasks

from .commands import CommandLists
from .files import DiscordFile, DiscordFiles, discord_file
from .messages import Messages
from .permissions import Permissions
from .sink import DiscordSink
from .target import Target

if TYPE_CHECKING:
    from gateway.core import Gateway

log = logging.getLogger("slashgate.discord")


class Input(Protocol):
    """An input as the gateway reads it: an interaction (``Invocation``) or a plain message
    (plain.py's ``Said``).
    """

    @property
    def message_id(self) -> str: ...
    @property
    def conversation(self) -> str: ...  # the Discord channel
    @property
    def user(self) -> str: ...
    @property
    def guild(self) -> str | None: ...
    @property
    def text(self) -> str: ...
    @property
    def files(self) -> tuple[DiscordFile, ...]: ...


class Unreadable(ValueError):
    """A signed interaction whose fields are not of the types Discord sends."""


# What an option's value is in Discord's payloads (None: a subcommand's, or left out).
_VALUES = (str, int, float, bool, type(None))
_NESTED = (hikari.OptionType.SUB_COMMAND, hikari.OptionType.SUB_COMMAND_GROUP)


def _innermost(
    name: str, options: Sequence[hikari.CommandInteractionOption]
) -> tuple[str, Sequence[hikari.CommandInteractionOption]]:
    """A subcommand (group) read as words of the command's name, as typed, and its options
    as the command's: the gateway publishes none, but an older list of the application may
    (else its options would be dropped and the command run without them).
    """
    while len(options) == 1 and options[0].type in _NESTED:
        name, options = f"{name} {options[0].name}", options[0].options or ()
    return name, options


class Invocation:
    """A command interaction read as the contract reads input: its text, files and target."""

    def __init__(
        self,
        interaction: hikari.CommandInteraction,
        payload: dict[str, Any],
        commands: CommandLists,
        host: frozenset[str],
    ) -> None:
        if not isinstance(interaction.command_name, str):
            raise Unreadable("a command name that is not a string")
        name, given = _innermost(interaction.command_name, interaction.options or ())
        if not all(isinstance(o.value, _VALUES) for o in given):
            raise Unreadable("an option value of a type Discord does not send")
        options = {o.name: o.value for o in given}
        guild = int(interaction.guild_id) if interaction.guild_id else None
        listing = commands(str(interaction.channel_id), guild)
        self.text = listing.text(name, options)
        resolved = (payload.get("data") or {}).get("resolved") or {}
        attached = resolved.get("attachments") or {}
        found = (
            discord_file(attached.get(str(o.value)) or {}, index)
            for index, o in enumerate(given, 1)
            if o.type == hikari.OptionType.ATTACHMENT
        )
        self.files: tuple[DiscordFile, ...] = tuple(f for f in found if f is not None)
        first = self.text[1:].split(maxsplit=1)
        self.target = Target(
            application=int(interaction.application_id),
            token=interaction.token,
            conversation=str(interaction.channel_id),
            user=str(interaction.user.id),
            # A host command's answer (/help, /status) is for the one who asked.
            ephemeral=bool(first) and first[0].lower() in host,
        )
        self.message_id = str(interaction.id)
        self.conversation = self.target.conversation
        self.user = self.target.user
        self.guild = str(interaction.guild_id) if interaction.guild_id else None


class DiscordInputs:
    def __init__(
        self,
        gateway: Gateway,
        name: str,
        rest: hikari.api.RESTClient,
        files: DiscordFiles,
        permissions: Permissions,
        commands: CommandLists,
        interval: float,
    ) -> None:
        self.gateway = gateway
        self.name = name
        self.rest = rest
        self.files = files
        self.permissions = permissions
        self.commands = commands
        self.interval = interval
        self.session: aiohttp.ClientSession | None = None  # for files; made at start
        self.stopping = False
        self._tasks = BackgroundTasks()

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        self._tasks.spawn(work)

    def read(self, interaction: hikari.CommandInteraction, payload: dict[str, Any]) -> Invocation:
        host = frozenset(c.name.lower() for c in self.gateway.host_commands())
        return Invocation(interaction, payload, self.commands, host)

    async def accept(self, invocation: Invocation, payload: dict[str, Any]) -> bool:
        """Journal the interaction and run it in the background; False for a replay.
        StoreUnavailable propagates: nothing runs.
        """
        claim = f"discord:interaction:{invocation.message_id}"
        record = {"interaction": payload}
        entry = await self.gateway.accept(self.name, invocation.target.conversation, record, claim)
        if entry is None:
            self.gateway.metrics.dedupe_hit(self.name)
            return False
        self.spawn(self._handle(invocation, entry))
        return True

    async def recovered(
        self, entry: Entry, interaction: hikari.CommandInteraction
    ) -> tuple[InboundMessage, ReplySink] | None:
        invocation = self.read(interaction, entry.body["interaction"])
        try:
            return await self.message(invocation), self._sink(invocation)
        except AttachmentError as exc:
            log.warning("a journaled Discord interaction cannot run again: %s", exc)
            return None

    async def drain(self, grace: float) -> None:
        await self._tasks.drain(grace)

    async def message(self, said: Input) -> InboundMessage:
        """The input as a message, its files fetched (AttachmentError when they cannot be)
        where its sender may talk.
        """
        message = InboundMessage(
            channel=self.name,
            conversation=said.conversation,
            user=said.user,
            text=said.text,
            message_id=said.message_id,
            meta={"guild": said.guild},
            direct=said.guild is None,
            groups=(said.conversation, said.guild) if said.guild else (said.conversation,),
        )
        if said.files and await self.gateway.access.lets_talk(message):
            assert self.session is not None  # made at start
            attachments = await self.files.fetch(self.session, said.files)
            message = replace(message, attachments=attachments)
        return message

    def _sink(self, invocation: Invocation) -> DiscordSink:
        return DiscordSink(
            Messages(self.rest, invocation.target),
            self.permissions,
            self.interval,
            self.gateway.settings.show_reasoning != "off",
        )

    async def _handle(self, invocation: Invocation, entry: Entry) -> None:
        sink = self._sink(invocation)
        await handle_once(self.gateway, self.message(invocation), sink, entry, log)
