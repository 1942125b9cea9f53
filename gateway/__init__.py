"""slashgate: the gateway application (core pipeline, sessions, runtimes, server)."""

from .config import Settings, load_settings
from .core import Gateway
from .inbound import Attachment, InboundMessage, Outcome, Reply, ReplySink

__all__ = [
    "Attachment",
    "Gateway",
    "InboundMessage",
    "Outcome",
    "Reply",
    "ReplySink",
    "Settings",
    "load_settings",
]
