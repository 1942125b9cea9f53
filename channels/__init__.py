"""Channel adapters, one per platform. Each translates platform <-> core and renders replies."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.channel import Channel
    from gateway.config import Settings
    from gateway.core import Gateway


def build_channels(gateway: Gateway, settings: Settings) -> list[Channel]:
    """Every channel the settings enable; the webhook channel always is."""
    from .webhook import WebhookChannel

    channels: list[Channel] = [WebhookChannel(gateway, settings)]
    if settings.webchat:
        from .webchat import WebchatChannel

        channels.append(WebchatChannel(gateway, settings))
    if settings.telegram_token is not None:
        from .telegram import TelegramChannel

        channels.append(TelegramChannel(gateway, settings))
    if settings.slack_bot_token and settings.slack_signing_secret:
        from .slack import SlackChannel

        channels.append(SlackChannel(gateway, settings))
    return channels
