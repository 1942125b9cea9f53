"""The channels the app serves. Adding one is its folder and one line in ``CHANNELS``: its
settings model (composed into the app's ``Settings``), whether the settings turn it on, its
class, and what keeps the gateway from starting, if anything does.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from channels.discord import settings as discord
from channels.matrix import settings as matrix
from channels.slack import settings as slack
from channels.telegram import settings as telegram
from channels.webchat import settings as webchat
from channels.webhook import settings as webhook
from channels.webhook.exposure import open_webhook_refusal
from gateway.access import Policy
from gateway.api import Channel
from gateway.core import Gateway
from gateway.settings import CoreSettings

S = TypeVar("S", bound=CoreSettings)


def settings_as(model: type[S], settings: CoreSettings) -> S:
    """The app's settings typed as one channel's ``model``, which they subclass."""
    if not isinstance(settings, model):
        raise TypeError(f"{type(settings).__name__} is no {model.__name__}")
    return settings


@dataclass(frozen=True)
class Plug(Generic[S]):
    settings: type[S]
    enabled: Callable[[S], bool]
    # "module:Class", imported only when the channel is on: aiogram alone takes seconds and
    # a hundred megabytes that a gateway without Telegram should not pay.
    channel: str
    # Why the gateway must not start with these settings (None: it may), asked before
    # anything starts: the webhook's refusal to serve /v1 open to anyone.
    refusal: Callable[[S], str | None] | None = None
    # "chat": its senders are platform users, and the access policy of its settings
    # (gateway.access.access_settings) decides who talks; deny by default for a new channel.
    # "token": reached with the gateway's token (the webhook, the web chat).
    access: Literal["chat", "token"] = "chat"
    # A chat channel's name, for ``slashgate access`` (which imports no channel to learn it).
    name: str | None = None

    def refuses(self, settings: CoreSettings) -> str | None:
        return self.refusal(settings_as(self.settings, settings)) if self.refusal else None

    def build(self, gateway: Gateway, settings: CoreSettings) -> Channel | None:
        """The channel, or None when the settings leave it off."""
        own = settings_as(self.settings, settings)
        if not self.enabled(own):
            return None
        module, _, name = self.channel.partition(":")
        made: Channel = getattr(importlib.import_module(module), name)(gateway, own)
        gateway.access.configure(made.name, Policy.of(own, made.name, self.access == "chat"))
        return made


CHANNELS: tuple[Plug[Any], ...] = (
    Plug(
        webhook.WebhookSettings,
        webhook.enabled,
        "channels.webhook.channel:WebhookChannel",
        open_webhook_refusal,
        access="token",
    ),
    Plug(
        webchat.WebchatSettings,
        webchat.enabled,
        "channels.webchat.channel:WebchatChannel",
        access="token",
    ),
    Plug(
        telegram.TelegramSettings,
        telegram.enabled,
        "channels.telegram.channel:TelegramChannel",
        name="telegram",
    ),
    Plug(slack.SlackSettings, slack.enabled, "channels.slack.channel:SlackChannel", name="slack"),
    Plug(
        discord.DiscordSettings,
        discord.enabled,
        "channels.discord.channel:DiscordChannel",
        name="discord",
    ),
    Plug(
        matrix.MatrixSettings,
        matrix.enabled,
        "channels.matrix.channel:MatrixChannel",
        name="matrix",
    ),
)


def chat_channels() -> list[str]:
    """The channels whose senders the access policy checks, by name."""
    return [plug.name for plug in CHANNELS if plug.access == "chat" and plug.name]


def refusal(settings: CoreSettings) -> str | None:
    """Why the gateway must not start as configured (the first channel's reason), or None."""
    return next(filter(None, (plug.refuses(settings) for plug in CHANNELS)), None)


def build_channels(gateway: Gateway, settings: CoreSettings) -> list[Channel]:
    """Every channel the settings turn on, in ``CHANNELS``' order (the webhook's always is)."""
    built = (plug.build(gateway, settings) for plug in CHANNELS)
    return [channel for channel in built if channel is not None]
