"""hikari's REST bot for the channel's settings."""

from __future__ import annotations

import hikari

from .settings import DiscordSettings


def rest_bot(settings: DiscordSettings) -> hikari.RESTBot:
    """hikari's REST bot, quiet: no banner, the gateway's logging left as it is."""
    if settings.discord_token is None or settings.discord_public_key is None:
        raise ValueError("the Discord channel needs discord_token and discord_public_key")
    return hikari.RESTBot(
        settings.discord_token.get_secret_value(),
        "Bot",
        public_key=settings.discord_public_key,
        banner=None,
        logs=None,
        suppress_optimization_warning=True,
        rest_url=settings.discord_api_base,
        http_settings=hikari.impl.HTTPSettings(
            timeouts=hikari.impl.HTTPTimeoutSettings(total=settings.platform_timeout)
        ),
    )
