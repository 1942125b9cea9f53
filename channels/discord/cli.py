"""``slashgate discord sync``: the application commands of the effective inventory published
now, without serving. The registry's plug brings it to the command line.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable

from contract import Command

from .settings import DiscordSettings, enabled


def sync_problem(settings: DiscordSettings) -> str | None:
    if not enabled(settings):
        return "discord sync needs discord_token and discord_public_key"
    return None


async def sync(
    settings: DiscordSettings, inventory: Callable[[], Awaitable[tuple[Command, ...]]]
) -> int:
    # hikari is imported only for this command (about a second), as the registry imports a
    # channel only when it is on.
    from .publish import publish_commands

    try:
        print(await publish_commands(settings, await inventory()))
    except Exception as exc:  # Discord refused the token, or could not be reached
        print(f"slashgate: cannot publish the Discord commands: {exc}", file=sys.stderr)
        return 1
    return 0
