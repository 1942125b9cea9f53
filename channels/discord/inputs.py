"""What the Discord channel does with a command interaction: journal it (its id is the claim:
a replayed delivery runs once) before Discord is answered, then run it in the background
with its sink, telling its user once when it fails or the channel stops first.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Sequence
from dataclasses import replace
from typing import Any, Protocol

import aiohttp
import hikari

from gateway.api import RESERVED, Attachment, Entry, GatewayAPI, InboundMessage, ReplySink
from gateway.attachments import AttachmentError
from gateway.tasks import BackgroundTasks

from .commands import CommandLists
from .files import DiscordFile, DiscordFiles, discord_file
from .messages import Messages
from .permissions import Permissions
from .sink import DiscordSink
from .target import Target
from .wire import COMMAND, Called, Option, Unreadable, read

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


_NESTED = (hikari.OptionType.SUB_COMMAND, hikari.OptionType.SUB_COMMAND_GROUP)


def _innermost(name: str, options: Sequence[Option]) -> tuple[str, Sequence[Option]]:
    """A subcommand (group) read as words of the command's name, as typed, and its options
    as the command's: the gateway publishes none, but an older list of the application may
    (else its options would be dropped and the command run without them).
    """
    while len(options) == 1 and options[0].type in _NESTED:
        name, options = f"{name} {options[0].name}", options[0].options or ()
    return name, options


def gateway_command(text: str) -> bool:
    """Whether ``text`` is one of the gateway's commands (any of them: /mode and /pair too,
    whether or not this conversation offers them).
    """
    if not text.startswith("/"):
        return False
    first = text[1:].split(maxsplit=1)
    return bool(first) and first[0].lower() in RESERVED


class Invocation:
    """A command interaction read as the contract reads input: its text, files and target."""

    def __init__(self, called: Called, commands: CommandLists) -> None:
        name, given = _innermost(called.data.name, called.data.options or ())
        guild = int(called.guild_id) if called.guild_id else None
        listing = commands(called.channel_id, guild)
        self.text = listing.text(name, {o.name: o.value for o in given})
        resolved = called.data.resolved
        attached = (resolved.attachments if resolved is not None else None) or {}
        found = (
            discord_file(item.model_dump(), index)
            for index, o in enumerate(given, 1)
            if o.type == hikari.OptionType.ATTACHMENT
            and (item := attached.get(str(o.value))) is not None
        )
        self.files: tuple[DiscordFile, ...] = tuple(f for f in found if f is not None)
        self.target = Target(
            application=int(called.application_id),
            token=called.token,
            conversation=called.channel_id,
            user=called.user_id,
            # A host command's answer (/help, /status) is for the one who asked.
            ephemeral=gateway_command(self.text),
        )
        self.message_id = called.id
        self.conversation = self.target.conversation
        self.user = self.target.user
        self.guild = called.guild_id


class DiscordInputs:
    def __init__(
        self,
        gateway: GatewayAPI,
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

    async def accept(self, called: Called, payload: dict[str, Any]) -> Invocation:
        """The command read as an input; journaled, it runs in the background (a replay does
        not). StoreUnavailable propagates: nothing runs.
        """
        invocation = Invocation(called, self.commands)
        claim = f"discord:interaction:{invocation.message_id}"
        record = {"interaction": payload}
        entry = await self.gateway.accept(self.name, invocation.target.conversation, record, claim)
        if entry is not None:
            self.spawn(self._handle(invocation, entry))
        return invocation

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, ReplySink] | None:
        try:
            called = read(entry.body["interaction"])
        except Unreadable as exc:  # journaled by a gateway that did not check it
            log.warning("a journaled Discord interaction cannot be read: %s", exc)
            return None
        if not isinstance(called, Called) or called.type != COMMAND:
            return None
        invocation = Invocation(called, self.commands)
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
        given = self.given(said)
        return given if isinstance(given, InboundMessage) else await given

    def given(self, said: Input) -> InboundMessage | Coroutine[Any, Any, InboundMessage]:
        """What ``gateway.handle`` takes: the message; with files, what fetches them (the
        gateway answers once whatever fails, the fetch included). Without files, nothing
        calls back into the channel.
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
        return self._with_files(message, said) if said.files else message

    async def _with_files(self, message: InboundMessage, said: Input) -> InboundMessage:
        """``message`` with ``said``'s files fetched where its sender may talk. A gateway
        command takes no files: they are named (the reply says they were not sent), never
        downloaded.
        """
        if gateway_command(said.text):
            named = tuple(Attachment(f.name, f.media_type, url=f.url) for f in said.files)
            return replace(message, attachments=named)
        if await self.gateway.access.lets_talk(message):
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
        try:
            await self.gateway.handle(self.given(invocation), sink, entry)
        finally:
            await sink.aclose()
