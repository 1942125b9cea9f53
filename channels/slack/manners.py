"""Slack manners: a slash command's reply says who ran what, ``/agent`` alone shows how to use
it, and queued input gets a reaction until its turn is answered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .sink import Target

QUEUED_REACTION = "eyes"


def invocation_line(target: Target) -> str | None:
    """``<@U1> ran `/deploy prod```: the first line of a slash command's reply."""
    if target.invocation is None:
        return None
    command = target.invocation.replace("`", "'")
    return f"<@{target.user}> ran `{command}`"


def umbrella_usage(umbrella: str) -> str:
    """What ``/agent`` with nothing after it answers (only to the one who typed it)."""
    return (
        f"Usage: `{umbrella} <command> [arguments]`, for example `{umbrella} help` "
        "(which lists the commands)."
    )
