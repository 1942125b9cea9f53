"""Host commands: run by the gateway itself, never forwarded (/help /new /cancel /status /mode)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contract import Classification, Command

from .runtimes.base import SessionInfo

if TYPE_CHECKING:
    from .conversation import Conversation
    from .core import Gateway

Handler = Callable[["Gateway", "Conversation", Classification], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class HostCommand:
    command: Command
    handler: Handler
    needs_modes: bool = False

    def available(self, info: SessionInfo) -> bool:
        return not self.needs_modes or bool(info.modes)


def command_line(command: Command) -> str:
    """``/name <hint>`` followed by the description, as one Markdown list item."""
    usage = f"/{command.name}" + (f" <{command.hint}>" if command.hint else "")
    text = f"- `{usage}`"
    return f"{text} — {command.description}" if command.description else text


async def _help(gateway: Gateway, conv: Conversation, result: Classification) -> str:
    host = gateway.host_commands(conv.info)
    runtime = conv.info.commands or ()
    lines = ["**Gateway commands**", *(command_line(c) for c in host)]
    lines += ["", "**Agent commands**"]
    lines += [command_line(c) for c in runtime] if runtime else ["- none reported yet"]
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
    if await gateway.stop_run(conv):
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
