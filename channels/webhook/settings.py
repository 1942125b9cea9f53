"""The webhook channel's settings (``[webhook]``, ``SLASHGATE_WEBHOOK_*``, ``idempotency_*``).

Always on. ``webhook_max_body`` is the gateway's (every channel's routes read at most that).
"""

from __future__ import annotations

from pydantic import Field, SecretStr

from gateway.settings import CoreSettings


class WebhookSettings(CoreSettings):
    webhook_token: SecretStr | None = None
    webhook_allow_public: bool = False  # no token on a non-loopback address, on purpose
    idempotency_size: int = Field(10_000, ge=1)
    idempotency_ttl: float = Field(3600.0, gt=0)
    # Owner-only commands (docs/access.md) are the `user`s listed here; none: every caller
    # with the token is an owner.
    webhook_owners: list[str] = Field(default_factory=list)
    webhook_owner_commands: list[str] = Field(default_factory=list)


def enabled(settings: WebhookSettings) -> bool:
    """The webhook channel is always on: ``/v1`` is the gateway's own API."""
    return True
