"""Slack manners: a slash command's reply says who ran what, ``/agent`` alone shows how to use
it, and queued input gets a reaction until its turn is answered.
"""

from __future__ import annotations

from channels.text import shorten

from .target import Target

QUEUED_REACTION = "eyes"
# UTF-16 units of the command shown in the invocation line: a command as long as Slack allows
# would take the whole first message and leave its reply no room.
COMMAND_SHOWN = 200


def invocation_line(target: Target) -> str | None:
    """``<@U1> ran `/deploy prod```: the first line of a slash command's reply; a longer
    command than ``COMMAND_SHOWN`` is cut, ending with ``…``.
    """
    if target.invocation is None:
        return None
    command = shorten(target.invocation.replace("`", "'"), COMMAND_SHOWN)
    return f"<@{target.user}> ran `{command}`"


def umbrella_usage(umbrella: str) -> str:
    """What ``/agent`` with nothing after it answers (only to the one who typed it)."""
    return (
        f"Usage: `{umbrella} <command> [arguments]`, for example `{umbrella} help` "
        "(which lists the commands)."
    )
