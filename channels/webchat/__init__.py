"""The web chat channel: a page at /chat that uses the webhook's /v1 API."""

from .channel import WebchatChannel

__all__ = ["WebchatChannel"]
