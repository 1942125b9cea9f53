"""The embedded runtime, the default: no other service needed."""

from .demo import DEMO_ENTITY
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
    "DEMO_ENTITY",
    "EmbeddedRuntime",
    "EmbeddedSession",
    "EntityDefinition",
    "HandlerContext",
    "HandlerError",
    "InboxMessage",
    "InboxWake",
    "ScheduleWake",
    "SlashCommands",
    "SpawnWake",
    "Wake",
]
