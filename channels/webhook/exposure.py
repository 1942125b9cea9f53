"""Whether the webhook API would be open to anyone: a non-loopback address, no token.

The ``/v1`` routes run the agent for whoever calls them. Served on a loopback address, only
this machine can; anywhere else, without ``webhook_token``, anyone who reaches the port can
(docs/decisions.md, "Secure defaults"). The Telegram and Slack routes carry their own secrets.
"""

from __future__ import annotations

import ipaddress
import logging

from .settings import WebhookSettings

log = logging.getLogger("slashgate")


def is_loopback(host: str) -> bool:
    """``127.0.0.0/8``, ``::1`` or ``localhost``; a name or ``""`` (every interface) is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name may resolve to anything: count it as public
        return False


def open_webhook_refusal(settings: WebhookSettings) -> str | None:
    """Why the gateway must not start as configured, or None when it may (with a warning
    when the webhook is served open on purpose).
    """
    where = settings.published_host or settings.host
    if settings.webhook_token or is_loopback(where):
        return None
    shown = where or "every interface"
    if settings.webhook_allow_public:
        log.warning(
            "webhook: /v1/* is open to anyone who reaches %s (no webhook_token; "
            "webhook_allow_public = true)",
            shown,
        )
        return None
    return (
        f"the webhook API (/v1/*) would be open to anyone who reaches {shown}: set "
        "webhook_token (SLASHGATE_WEBHOOK_TOKEN), or listen on 127.0.0.1, or set "
        "webhook_allow_public = true (SLASHGATE_WEBHOOK_ALLOW_PUBLIC=true) to serve it "
        "without a token on purpose (docs/deploy.md)"
    )
