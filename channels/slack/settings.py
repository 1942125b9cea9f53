"""The Slack channel's settings (``[slack]``, ``SLASHGATE_SLACK_*``): on when the bot token
and the signing secret are set.
"""

from __future__ import annotations

import re
from typing import Self

from pydantic import SecretStr, field_validator, model_validator

from gateway.access import Ids, access_settings
from gateway.settings import Rate
from gateway.validation import SettingsRule

# Slack's ids: users U/W..., channels C/G/D..., teams T..., in capitals and digits.
IDS = Ids(re.compile(r"[A-Z][A-Z0-9]{1,20}"), "a Slack user, channel or team id (e.g. U024BE7LH)")

_NEEDED = ("slack_bot_token", "slack_signing_secret")


class SlackSettings(access_settings("slack", IDS)):  # type: ignore[misc]
    slack_bot_token: SecretStr | None = None
    """The Bot User OAuth Token (`xoxb-...`); with the signing secret, turns the Slack channel
    on."""
    slack_signing_secret: SecretStr | None = None
    """The app's Signing Secret (Basic Information): verifies each request from Slack."""
    slack_app_token: SecretStr | None = None
    """Socket Mode instead of HTTP (no public URL needed): the app-level token (`xapp-...`)."""
    slack_api_base: str = "https://slack.com/api/"
    """Web API base URL (tests point it at a fake)."""
    slack_umbrella_command: str = "agent"
    """The command that takes any command as text: `/agent deploy prod`."""
    slack_public_url: str | None = None
    """The gateway's public `https://` URL, for `slashgate slack manifest` in HTTP mode."""
    # Outbound rate limits (docs/rate-limits.md), Slack's published figures.
    slack_rate_channel: Rate = 1.0
    """Messages a second in one channel; 0: no limit."""
    slack_rate_update: Rate = 50.0
    """`chat.update` calls a minute for the workspace (Tier 3; shared by replicas on Redis); 0:
    no limit."""

    @model_validator(mode="after")
    def _slack_is_wholly_set(self) -> Self:
        # A half-set channel would be silently off: say which setting is missing instead.
        # (slack_app_token alone is fine: it is set before the app exists, for its manifest.)
        if any(getattr(self, name) for name in _NEEDED):
            for name in _NEEDED:
                if not getattr(self, name):
                    raise SettingsRule(
                        "{name} is not set: the Slack channel needs its bot token and its "
                        "signing secret",
                        name=name,
                    )
        return self

    @field_validator("slack_public_url")
    @classmethod
    def _public_url_is_https(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("https://"):
            raise ValueError("must be the gateway's public https:// URL (Slack posts only there)")
        return value


def enabled(settings: SlackSettings) -> bool:
    return bool(settings.slack_bot_token and settings.slack_signing_secret)
