"""What the gateway's own commands do (gateway/host.py declares them): each gets the stages it
uses, the conversation it was typed in and its classification, and returns the reply's text.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from contract import Classification, Command

from .access import Access
from .conversation import Conversation
from .host import command_line, host_commands
from .inbound import InboundMessage
from .journal import Journal
from .menus import Menus
from .runtimes.base import Runtime
from .stopping import Stopper


@dataclass(frozen=True, slots=True)
class HostTools:
    """The stages the gateway's commands act on; one, made with the gateway."""

    menus: Menus
    stopper: Stopper
    journal: Journal
    runtime: Runtime
    access: Access


Handler = Callable[[HostTools, Conversation, Classification, InboundMessage], Awaitable[str]]


async def _help(
    tools: HostTools, conv: Conversation, result: Classification, message: InboundMessage
) -> str:
    channel, _, conversation = conv.key.partition(":")
    labeler = tools.menus.labelers.get(channel)

    def line(command: Command) -> str:
        return command_line(command, labeler(conversation, command.name) if labeler else None)

    # What the sender may not run is not offered (owner-only commands). /pair is not listed:
    # the pairing reply names it to the one who needs it, the owner.
    host = tools.access.offered(message, host_commands(conv.info))
    # A session still opening has reported nothing yet: the agent's commands as last seen.
    known = conv.info.commands if conv.info.commands is not None else tools.menus.inventory
    runtime = tools.access.offered(message, known or ())
    lines = ["**Gateway commands**", *(line(c) for c in host)]
    lines += ["", "**Agent commands**"]
    lines += [line(c) for c in runtime] if runtime else ["- none reported yet"]
    return "\n".join(lines)


async def _new(
    tools: HostTools, conv: Conversation, result: Classification, message: InboundMessage
) -> str:
    # Queue first, then stop the run: the slot comes to /new before any queued follow-up,
    # so the old session is closed under no turn and the follow-ups run in the new one.
    slot = asyncio.ensure_future(conv.acquire(front=True))
    stopped = await tools.stopper.stop_run(conv)
    await slot
    try:
        await conv.reset(forget=True)
    finally:
        conv.release()
    return "Started a new session." + (" The running turn was cancelled." if stopped else "")


async def _cancel(
    tools: HostTools, conv: Conversation, result: Classification, message: InboundMessage
) -> str:
    if await tools.stopper.stop_run(conv) or await tools.journal.cancel_elsewhere(conv.key):
        return "Cancelled the running turn."
    return "Nothing is running."


async def _status(
    tools: HostTools, conv: Conversation, result: Classification, message: InboundMessage
) -> str:
    run = conv.run
    if run is None:
        state = "idle"
    else:
        what = f"`/{run.command}`" if run.command else "a message"
        state = f"running {what} for {time.monotonic() - run.started:.0f}s"
    runtime_commands = len(conv.info.commands or ())
    gateway_commands = len(host_commands(conv.info))
    lines = [
        f"**Session:** {state}",
        f"**Runtime:** {tools.runtime.describe()}",
        f"**Queue:** {conv.queued} waiting",
        f"**Commands:** {runtime_commands} from the agent, {gateway_commands} from the gateway",
    ]
    if conv.info.current_mode:
        lines.append(f"**Mode:** {conv.info.current_mode}")
    if conv.info.current_model:
        lines.append(f"**Model:** {conv.info.current_model}")
    return "\n".join(lines)


async def _mode(
    tools: HostTools, conv: Conversation, result: Classification, message: InboundMessage
) -> str:
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


async def _pair(
    tools: HostTools, conv: Conversation, result: Classification, message: InboundMessage
) -> str:
    code = result.args.strip()
    if not code:
        return "Send `/pair CODE` with the pairing code the new user was given."
    return await tools.access.approve(message.channel, code)


HANDLERS: dict[str, Handler] = {
    "help": _help,
    "new": _new,
    "cancel": _cancel,
    "status": _status,
    "mode": _mode,
    "pair": _pair,
}
"""By command name: one for each of host.HOST_COMMANDS."""
