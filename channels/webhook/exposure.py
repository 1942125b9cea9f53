"""Whether the webhook API would be open to anyone: a non-loopback listen address, no token.

The ``/v1`` routes run the agent for whoever calls them. Served on a loopback address, only
this machine can; anywhere else, without ``webhook_token``, anyone who reaches the port can
(docs/internals/decisions.md, "Secure defaults"). The address the server listens on decides. The one
exception is a container whose port is published on the host's loopback (compose.yaml): it
must listen on every interface of the container, and ``published_host`` says where the port
really is. That is believed only where the gateway can tell it runs in a container, and even
there the other containers on its network reach the API, which the start says. The Telegram,
Slack and Discord routes carry their own secrets.
"""

from __future__ import annotations

import ipaddress
import logging
from pathlib import Path

from .settings import WebhookSettings

log = logging.getLogger("slashgate")

# Docker writes the first into every container, Podman the second.
CONTAINER_MARKERS = (Path("/.dockerenv"), Path("/run/.containerenv"))


def is_loopback(host: str) -> bool:
    """``127.0.0.0/8``, ``::1`` or ``localhost``; a name or ``""`` (every interface) is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name may resolve to anything: count it as public
        return False


def in_container() -> bool:
    """The gateway runs in a Docker or Podman container (its marker file is there)."""
    return any(marker.exists() for marker in CONTAINER_MARKERS)


def _shown(settings: WebhookSettings) -> str:
    return settings.host or "every interface"


def _published_in_a_container(settings: WebhookSettings) -> bool:
    """A loopback ``published_host``, believed: the gateway runs in a container."""
    published = settings.published_host
    return bool(published) and is_loopback(published or "") and in_container()


def assess(settings: WebhookSettings) -> tuple[str | None, str | None]:
    """(why the gateway must not start as configured, or None; the warning its start logs,
    or None). Both None: /v1 is on loopback, or has a token.
    """
    if settings.webhook_token or is_loopback(settings.host):
        return None, None
    if settings.webhook_allow_public:
        return None, _OPEN.format(where=_shown(settings))
    if _published_in_a_container(settings):
        return None, _NEIGHBOURS.format(published=settings.published_host)
    refusal = (
        f"the webhook API (/v1/*) would be open to anyone who reaches {_shown(settings)}: set "
        "webhook_token (SLASHGATE_WEBHOOK_TOKEN), or listen on 127.0.0.1, or set "
        "webhook_allow_public = true (SLASHGATE_WEBHOOK_ALLOW_PUBLIC=true) to serve it "
        "without a token on purpose (docs/deploy.md)"
    )
    if settings.published_host and is_loopback(settings.published_host):
        markers = " or ".join(map(str, CONTAINER_MARKERS))
        refusal += (
            f"; published_host = {settings.published_host} stands in for the token only in "
            f"a container, and this is none ({markers} not found)"
        )
    return refusal, None


def open_webhook_refusal(settings: WebhookSettings) -> str | None:
    """Why the gateway must not start as configured, or None when it may (with a warning
    when the webhook is served without a token beyond this machine's loopback).
    """
    refusal, warning = assess(settings)
    if warning is not None:
        log.warning("webhook: %s", warning)
    return refusal


_OPEN = (
    "/v1/* is open to anyone who reaches {where} (no webhook_token; webhook_allow_public = true)"
)
_NEIGHBOURS = (
    "/v1/* has no webhook_token: the port is published on {published} of the host only, but "
    "other containers on this container's network reach the API without a token (set "
    "webhook_token to close it)"
)
