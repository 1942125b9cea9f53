"""The webhook channel's settings (``[webhook]``, ``SLASHGATE_WEBHOOK_*``, ``idempotency_*``).

Always on. ``webhook_max_body`` is the gateway's (every channel's routes read at most that).
"""

from __future__ import annotations

from pydantic import Field, SecretStr

from gateway.settings import CoreSettings


class WebhookSettings(CoreSettings):
    webhook_token: SecretStr | None = None
    """Bearer token required on `/v1/*` when set; required on an address other than
    loopback."""
    webhook_allow_public: bool = False
    """Serve `/v1/*` without a token on a non-loopback address or through a proxy, on purpose
    (a proxy in front authenticates, say)."""
    idempotency_size: int = Field(10_000, ge=1)
    """Requests with an Idempotency-Key whose answer is still being made that one process
    tracks, so that a repeat waits for it (the keys kept count in `dedupe_size`)."""
    idempotency_ttl: float = Field(3600.0, gt=0)
    """Seconds an Idempotency-Key's answer is replayed."""
    webhook_owners: list[str] = Field(default_factory=list)
    """The `user` values that run owner-only commands; none: every caller with
    the token is an owner."""
    webhook_owner_commands: list[str] = Field(default_factory=list)
    """More owner-only commands, by name or pattern (`"skill:*"`)."""


def enabled(settings: WebhookSettings) -> bool:
    """The webhook channel is always on: ``/v1`` is the gateway's own API."""
    return True
