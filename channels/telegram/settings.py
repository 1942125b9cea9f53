"""The Telegram channel's settings (``[telegram]``, ``SLASHGATE_TELEGRAM_*``): on when
``telegram_token`` is set.
"""

from __future__ import annotations

import re
from typing import Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator

from gateway.access import Ids, access_settings
from gateway.settings import Rate
from gateway.validation import SettingsRule

# Telegram's user and chat ids: whole numbers (groups' are negative).
IDS = Ids(re.compile(r"-?[0-9]{1,20}"), "a Telegram user or chat id (a whole number)")

MIN_SECRET = 16  # characters: guessing it must be out of reach (16 of 64 symbols: 96 bits)
_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")  # Telegram's rule for setWebhook's secret_token


class TelegramSettings(access_settings("telegram", IDS)):  # type: ignore[misc]
    telegram_token: SecretStr | None = None
    """The bot token from @BotFather; setting it turns the Telegram channel on."""
    telegram_secret: SecretStr | None = None
    """Webhook mode: the `secret_token` Telegram sends back with each update (16-256 of
    `A-Z a-z 0-9 _ -`); required with a token in webhook mode."""
    telegram_mode: Literal["webhook", "polling"] = "webhook"
    """`webhook` (Telegram posts to `/telegram/webhook`) or `polling` (no public URL needed;
    removes the bot's webhook)."""
    telegram_api_base: str = "https://api.telegram.org"
    """Bot API base URL, for a self-hosted Bot API server."""
    telegram_group_text: Literal["mention", "all"] = "mention"
    """Plain text in groups: `mention` (only when the bot is mentioned or replied to) or
    `all`."""
    telegram_webhook_url: str | None = None
    """Webhook mode: the public `https://` URL of `/telegram/webhook`; when set, `setWebhook`
    runs at start."""
    telegram_edit_interval: float = Field(1.0, gt=0)
    """Seconds between edits of a streamed reply in one chat."""
    telegram_media_group_wait: float = Field(1.0, ge=0)
    """Seconds an album waits for its next item before it goes as one message."""
    # Outbound rate limits (docs/rate-limits.md), Telegram's published figures.
    telegram_rate_global: Rate = 30.0
    """Messages a second for the whole bot (shared by replicas on Redis); 0: no limit."""
    telegram_rate_private: Rate = 1.0
    """Messages a second in one private chat; 0: no limit."""
    telegram_rate_group: Rate = 20.0
    """Messages a minute in one group; 0: no limit."""

    @field_validator("telegram_secret")
    @classmethod
    def _telegram_secret_is_strong(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        secret = value.get_secret_value()
        if not _SECRET.fullmatch(secret):
            raise ValueError(
                "must be 1-256 of A-Z, a-z, 0-9, _ and - (Telegram's rule for the secret_token "
                "of setWebhook)"
            )
        if len(secret) < MIN_SECRET:
            raise ValueError(
                f"must be at least {MIN_SECRET} characters: it alone proves that an update "
                "comes from Telegram, and whoever guesses it can write as any user "
                "(openssl rand -hex 32 makes one)"
            )
        return value

    @model_validator(mode="after")
    def _telegram_webhook_has_a_secret(self) -> Self:
        if self.telegram_token and self.telegram_mode == "webhook" and not self.telegram_secret:
            raise SettingsRule(
                "{secret} is not set: Telegram webhook mode needs it (the secret_token given "
                "to setWebhook); or set {polling}",
                secret="telegram_secret",
                polling=("telegram_mode", "polling"),
            )
        return self

    @model_validator(mode="after")
    def _telegram_is_wholly_set(self) -> Self:
        # A half-set channel would be silently off: say which setting is missing instead.
        if not self.telegram_token:
            for name in ("telegram_secret", "telegram_webhook_url"):
                if getattr(self, name):
                    raise SettingsRule(
                        "{name} is set but {token} is not: the Telegram channel needs its bot "
                        "token",
                        name=name,
                        token="telegram_token",
                    )
        if self.telegram_webhook_url and self.telegram_mode == "polling":
            raise SettingsRule(
                '{url} is set but telegram_mode is "polling": the URL is for webhook mode '
                "only; remove it or set {webhook}",
                url="telegram_webhook_url",
                webhook=("telegram_mode", "webhook"),
            )
        return self


def enabled(settings: TelegramSettings) -> bool:
    return settings.telegram_token is not None
