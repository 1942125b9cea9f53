"""Entity model of the composer-input RFC, in Python: definitions, typed wakes, handler context."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from contract import Category, Command, CommandRegistry, categorize

from ...frozen import quick_init

# The wakes are plain dataclasses (one of each per turn; pydantic's validation of what the
# runtime itself builds was most of their cost); ``TypeAdapter(Wake)`` still validates the
# RFC's JSON into them.


@quick_init  # one per turn, as the next
@dataclass(frozen=True, slots=True, kw_only=True)
class InboxMessage:
    __pydantic_config__ = ConfigDict(populate_by_name=True)

    message_type: str
    payload: Any
    sender: Annotated[str | None, Field(alias="from")] = None


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class InboxWake:
    type: Literal["inbox"] = "inbox"
    message: InboxMessage


@dataclass(frozen=True, slots=True, kw_only=True)
class SpawnWake:
    type: Literal["spawn"] = "spawn"
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleWake:
    type: Literal["schedule"] = "schedule"
    name: str


Wake = Annotated[InboxWake | SpawnWake | ScheduleWake, Field(discriminator="type")]


class HandlerError(Exception):
    """Raised by a handler to fail the turn; without a category, the text is categorized."""

    def __init__(self, message: str, category: Category | None = None) -> None:
        super().__init__(message)
        self.category: Category = category or categorize(message)


class SlashCommands:
    """``ctx.slash_commands``: the entity's materialized command list (static + dynamic).

    ``shared``: ``registry`` is the runtime's static one, shared by every session until this
    one registers a command of its own (a registry per idle conversation is most of its size).
    """

    __slots__ = ("_on_change", "_registry", "_shared")

    def __init__(
        self,
        registry: CommandRegistry,
        on_change: Callable[[tuple[Command, ...]], None],
        shared: bool = False,
    ) -> None:
        self._registry = registry
        self._on_change = on_change
        self._shared = shared

    def get(self, name: str) -> Command | None:
        return self._registry.get(name)

    def list(self) -> tuple[Command, ...]:
        return self._registry.list()

    def dynamic(self) -> tuple[Command, ...]:
        """The commands registered at run time (what a restart must bring back)."""
        if self._shared:
            return ()
        return tuple(c for c in self._registry.list() if c.source == "dynamic")

    def register(self, command: Command) -> None:
        if self._shared:
            self._registry, self._shared = CommandRegistry(self._registry.list()), False
        self._on_change(self._registry.register(command))

    def unregister(self, name: str) -> bool:
        removed = self._registry.unregister(name)
        if removed:
            self._on_change(self._registry.list())
        return removed


@dataclass
class HandlerContext:
    entity_id: str
    wake: Wake
    slash_commands: SlashCommands
    state: dict[str, Any]
    reply: Callable[[str], Awaitable[None]]
    """Stream a chunk of the reply."""
    conversation: str = ""
    """The gateway's conversation key (``<channel>:<id>``); ``entity_id`` is derived from it."""


Handler = Callable[[HandlerContext], Awaitable[None]]


@dataclass(frozen=True)
class EntityDefinition:
    type: str
    handler: Handler
    slash_commands: tuple[Command, ...] = field(default_factory=tuple)
    description: str = ""
