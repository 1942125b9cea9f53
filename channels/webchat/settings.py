"""The web chat channel's setting: ``webchat``, the page at /chat (on by default)."""

from __future__ import annotations

from gateway.settings import CoreSettings


class WebchatSettings(CoreSettings):
    # It talks to the webhook's /v1 API.
    webchat: bool = True
    """Serve the web chat page at `/chat`."""


def enabled(settings: WebchatSettings) -> bool:
    return settings.webchat
