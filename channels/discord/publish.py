"""``slashgate discord sync``: publish the command list now, from the effective inventory,
without serving (the channel does the same at start when ``discord_sync_commands`` is on).
"""

from __future__ import annotations

import hikari

from contract import Command

from .bot import rest_bot
from .settings import DiscordSettings
from .sync import CommandSync


async def publish_commands(settings: DiscordSettings, inventory: tuple[Command, ...]) -> str:
    """Overwrite Discord's command list where it differs from ``inventory``; what was done."""
    rest = rest_bot(settings).rest
    assert isinstance(rest, hikari.impl.RESTClientImpl)  # what RESTBot makes
    sync = CommandSync(rest, settings.discord_umbrella_command, settings.discord_guild_ids)
    sync.update(inventory)
    rest.start()
    try:
        written = await sync.publish()
    finally:
        await rest.close()
    scopes = len(settings.discord_guild_ids) or 1
    where = f"{scopes} guild(s)" if settings.discord_guild_ids else "globally"
    if sync.failed:  # each logged with Discord's answer; the others are written
        refused = ", ".join(map(str, sync.failed))
        raise RuntimeError(
            f"Discord refused the commands of guild(s) {refused} ({written} of {scopes} written; "
            "the next sync tries again)"
        )
    if not written:
        return f"{len(sync.commands.builders)} commands, already published {where}"
    return (
        f"{len(sync.commands.builders)} commands published {where} ({written} of {scopes} written)"
    )
