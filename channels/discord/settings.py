"""The Discord channel's settings (``[discord]``, ``SLASHGATE_DISCORD_*``): on when the bot
token and the application's public key are set.
"""

from __future__ import annotations

import re
from typing import Self

from pydantic import Field, PositiveInt, SecretStr, field_validator, model_validator

from gateway.access import Ids, access_settings
from gateway.api import RESERVED
from gateway.validation import HTTP_URL, SettingsRule

# Discord's user, guild and channel ids: snowflakes, whole numbers.
IDS = Ids(re.compile(r"[0-9]{1,20}"), "a Discord user, guild or channel id (a snowflake)")

_NEEDED = ("discord_token", "discord_public_key")
_HEX_KEY = re.compile(r"[0-9a-fA-F]{64}")  # an Ed25519 public key: 32 bytes


class DiscordSettings(access_settings("discord", IDS)):  # type: ignore[misc]
    discord_token: SecretStr | None = None
    """The bot token (the application's Bot page); with the public key, turns the Discord
    channel on."""
    discord_public_key: str | None = None
    """The application's public key (General Information, 64 hexadecimal characters): verifies
    each interaction."""
    discord_api_base: str = "https://discord.com/api/v10"
    """REST API base URL (tests point it at a fake)."""
    discord_umbrella_command: str = "agent"
    """The command that takes any command as text: `/agent command:deploy prod`."""
    discord_guild_ids: tuple[PositiveInt, ...] = ()
    """Publish the commands in these servers (instantly, for development) instead of
    globally."""
    # A bulk overwrite, only when the list differs from what Discord has.
    discord_sync_commands: bool = True
    """Publish the command list at start and whenever it changes; `false`: only `slashgate
    discord sync` does."""
    # Discord allows about 5 edits per 5 seconds.
    discord_edit_interval: float = Field(1.0, gt=0, allow_inf_nan=False)
    """Seconds between two edits of a streamed reply."""
    # Intents DM_MESSAGES and GUILD_MESSAGES; no privileged intent.
    discord_gateway: bool = False
    """Also answer direct messages and mentions of the bot, over Discord's Gateway connection
    (a WebSocket)."""

    @model_validator(mode="after")
    def _discord_is_wholly_set(self) -> Self:
        # A half-set channel would be silently off: say which setting is missing instead.
        if any(getattr(self, name) for name in _NEEDED):
            for name in _NEEDED:
                if not getattr(self, name):
                    raise SettingsRule(
                        "{name} is not set: the Discord channel needs its bot token and its "
                        "application's public key",
                        name=name,
                    )
        elif self.discord_gateway:
            raise SettingsRule(
                "{gateway} is set but {token} is not: the Gateway connection is part of the "
                "Discord channel (set {token} and {key})",
                gateway="discord_gateway",
                token="discord_token",
                key="discord_public_key",
            )
        return self

    @field_validator("discord_public_key")
    @classmethod
    def _public_key_is_hex(cls, value: str | None) -> str | None:
        if value is not None and not _HEX_KEY.fullmatch(value.strip()):
            raise ValueError("must be the application's public key: 64 hexadecimal characters")
        return value.strip() if value is not None else None

    @field_validator("discord_api_base")
    @classmethod
    def _api_base_is_a_url(cls, value: str) -> str:
        if not HTTP_URL.fullmatch(value):
            raise ValueError("must be an http:// or https:// URL, like https://discord.com/api/v10")
        return value

    @field_validator("discord_umbrella_command")
    @classmethod
    def _umbrella_is_a_name(cls, value: str) -> str:
        name = value.lower().lstrip("/")
        if not re.fullmatch(r"[a-z0-9_-]{1,32}", name):
            raise ValueError("must be a Discord command name: 1-32 of a-z, 0-9, - and _")
        if name in RESERVED:  # published once, as the umbrella: the gateway's own would be hidden
            raise ValueError(f"must not be the gateway's command /{name}; the default is agent")
        return name


def enabled(settings: DiscordSettings) -> bool:
    return bool(settings.discord_token and settings.discord_public_key)
