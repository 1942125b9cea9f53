"""The pi runtime: ``pi --mode rpc`` per conversation, JSON lines over stdio."""

from .runtime import PiRuntime
from .session import PiSession

__all__ = ["PiRuntime", "PiSession"]
