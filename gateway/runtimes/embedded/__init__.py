"""The embedded runtime, the default: no other service needed."""

from .bot import Bot, CommandHandler, Context, Reference
from .demo import demo_bot
from .entity import (
    EntityDefinition,
    HandlerContext,
    HandlerError,
    InboxMessage,
    InboxWake,
    ScheduleWake,
    SlashCommands,
    SpawnWake,
    Wake,
)
from .runtime import EmbeddedRuntime, EmbeddedSession

__all__ = [
    "Bot",
    "CommandHandler",
    "Context",
    "EmbeddedRuntime",
    "EmbeddedSession",
    "EntityDefinition",
    "HandlerContext",
    "HandlerError",
    "InboxMessage",
    "InboxWake",
    "Reference",
    "ScheduleWake",
    "SlashCommands",
    "SpawnWake",
    "Wake",
    "demo_bot",
]
