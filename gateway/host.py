"""Host commands: run by the gateway itself, never forwarded (/help /new /cancel /status /mode)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contract import Classification, Command

from .inventory import usage_hint
from .runtimes.base import SessionInfo

if TYPE_CHECKING:
    from .conversation import Conversation
    from .core import Gateway

Handler = Callable[["Gateway", "Conversation", Classification], Awaitable[str]]
Labeler = Callable[[str, str], str | None]
"""A channel's spelling of a command in one conversation (``pr-review`` -> ``pr_review`` on
Telegram, whose clients make ``/pr_review`` tappable); None when it has none."""


@dataclass(frozen=True, slots=True)
class HostCommand:
    command: Command
    handler: Handler
    needs_modes: bool = False

    def available(self, info: SessionInfo) -> bool:
        return not self.needs_modes or bool(info.modes)


def command_line(command: Command, label: str | None = None) -> str:
    """``/name <hint>`` followed by the description, as one Markdown list item. With the
    channel's ``label`` the name is plain text (clients link it) and only the hint is code.
    """
    hint = usage_hint(command.hint)
    if label is None:
        usage = f"/{command.name}" + (f" {hint}" if hint else "")
        text = f"- `{usage}`"
    else:
        text = f"- /{_markdown_escape(label)}" + (f" `{hint}`" if hint else "")
    return f"{text} — {command.description}" if command.description else text


def _markdown_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "\\`*_[]<>#|~" else c for c in text)


async def _help(gateway: Gateway, conv: Conversation, result: Classification) -> str:
    channel, _, conversation = conv.key.partition(":")
    labeler = gateway.labelers.get(channel)

    def line(command: Command) -> str:
        return command_line(command, labeler(conversation, command.name) if labeler else None)

    host = gateway.host_commands(conv.info)
    # A session still opening has reported nothing yet: the agent's commands as last seen.
    known = conv.info.commands if conv.info.commands is not None else gateway.inventory
    runtime = known or ()
    lines = ["**Gateway commands**", *(line(c) for c in host)]
    lines += ["", "**Agent commands**"]
    lines += [line(c) for c in runtime] if runtime else ["- none reported yet"]
    return "\n".join(lines)


async def _new(gateway: Gateway, conv: Conversation, result: Classification) -> str:
    # Queue first, then stop the run: the slot comes to /new before any queued follow-up,
    # so the old session is closed under no turn and the follow-ups run in the new one.
    slot = asyncio.ensure_future(conv.acquire(front=True))
    stopped = await gateway.stop_run(conv)
    await slot
    try:
        await conv.reset(forget=True)
    finally:
        conv.release()
    return "Started a new session." + (" The running turn was cancelled." if stopped else "")


async def _cancel(gateway: Gateway, conv: Conversation, result: Classification) -> str:
    if await gateway.stop_run(conv) or await gateway.journal.cancel_elsewhere(conv.key):
        return "Cancelled the running turn."
    return "Nothing is running."


async def _status(gateway: Gateway, conv: Conversation, result: Classification) -> str:
    run = conv.run
    if run is None:
        state = "idle"
    else:
        what = f"`/{run.command}`" if run.command else "a message"
        state = f"running {what} for {time.monotonic() - run.started:.0f}s"
    runtime_commands = len(conv.info.commands or ())
    host_commands = len(gateway.host_commands(conv.info))
    lines = [
        f"**Session:** {state}",
        f"**Runtime:** {gateway.runtime.describe()}",
        f"**Queue:** {conv.queued} waiting",
        f"**Commands:** {runtime_commands} from the agent, {host_commands} from the gateway",
    ]
    if conv.info.current_mode:
        lines.append(f"**Mode:** {conv.info.current_mode}")
    if conv.info.current_model:
        lines.append(f"**Model:** {conv.info.current_model}")
    return "\n".join(lines)


async def _mode(gateway: Gateway, conv: Conversation, result: Classification) -> str:
    modes = conv.info.modes
    listing = ", ".join(f"`{m.id}`" for m in modes)
    wanted = result.args.strip()
    if not wanted:
        return f"Current mode: `{conv.info.current_mode or 'unknown'}`. Available: {listing}."
    match = next((m for m in modes if m.id.lower() == wanted.lower()), None)
    if match is None:
        return f"Unknown mode `{wanted}`. Available: {listing}."
    session = await conv.open()
    await session.set_mode(match.id)
    conv.info.current_mode = match.id
    return f"Mode set to `{match.id}`."


HOST_COMMANDS: tuple[HostCommand, ...] = (
    HostCommand(Command(name="help", description="List commands", source="gateway"), _help),
    HostCommand(Command(name="new", description="Start a new session", source="gateway"), _new),
    HostCommand(
        Command(name="cancel", description="Cancel the running turn", source="gateway"), _cancel
    ),
    HostCommand(
        Command(name="status", description="Show session status", source="gateway"), _status
    ),
    HostCommand(
        Command(
            name="mode",
            description="Show or switch the agent's mode",
            hint="mode id",
            source="gateway",
        ),
        _mode,
        needs_modes=True,
    ),
)
RESERVED = frozenset(h.command.name for h in HOST_COMMANDS)
"""The gateway's command names: a runtime command of the same name is listed as an alias."""
