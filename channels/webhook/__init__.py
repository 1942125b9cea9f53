"""The webhook channel: plain HTTP on the gateway's own server."""

from .channel import WebhookChannel

__all__ = ["WebhookChannel"]
