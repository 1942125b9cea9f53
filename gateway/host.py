"""The gateway's own commands as the menus and the contract know them (/help /new /cancel
/status /mode /pair): never forwarded to the runtime. What each does is gateway/host_handlers.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from contract import Command

from .inventory import usage_hint
from .runtimes.base import SessionInfo

Labeler = Callable[[str, str], str | None]
"""A channel's spelling of a command in one conversation (``pr-review`` -> ``pr_review`` on
Telegram, whose clients make ``/pr_review`` tappable); None when it has none."""


@dataclass(frozen=True, slots=True)
class HostCommand:
    command: Command
    needs_modes: bool = False
    # In the menus and /help (seen by everyone, the same on every channel); /pair is for
    # owners, whom the pairing reply tells of it.
    listed: bool = True

    def available(self, info: SessionInfo) -> bool:
        return not self.needs_modes or bool(info.modes)


HOST_COMMANDS: tuple[HostCommand, ...] = (
    HostCommand(Command(name="help", description="List commands", source="gateway")),
    HostCommand(Command(name="new", description="Start a new session", source="gateway")),
    HostCommand(Command(name="cancel", description="Cancel the running turn", source="gateway")),
    HostCommand(Command(name="status", description="Show session status", source="gateway")),
    HostCommand(
        Command(
            name="mode",
            description="Show or switch the agent's mode",
            hint="mode id",
            source="gateway",
        ),
        needs_modes=True,
    ),
    HostCommand(
        Command(
            name="pair",
            description="Approve a new user's pairing code (owners)",
            hint="code",
            source="gateway",
        ),
        listed=False,
    ),
)
RESERVED = frozenset(h.command.name for h in HOST_COMMANDS)
"""The gateway's command names: a runtime command of the same name is listed as an alias."""


def host_commands(info: SessionInfo, unlisted: bool = False) -> tuple[Command, ...]:
    """The gateway's commands offered in a session that reported ``info``: those of the menus,
    or (``unlisted``) every one the contract recognizes.
    """
    return tuple(h.command for h in HOST_COMMANDS if h.available(info) and (unlisted or h.listed))


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
