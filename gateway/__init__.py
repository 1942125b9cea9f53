"""slashgate's gateway: the core pipeline, sessions, runtimes and the ports channels implement."""

from .core import Gateway
from .inbound import Attachment, InboundMessage, Outcome, Reply, ReplySink
from .settings import CoreSettings

__all__ = [
    "Attachment",
    "CoreSettings",
    "Gateway",
    "InboundMessage",
    "Outcome",
    "Reply",
    "ReplySink",
]
