"""Unified runtime events: every backend normalizes its protocol into these, channels render them.

Plain frozen dataclasses: they are created per streamed chunk, so they stay cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from contract import Category, Command, categorize

Status = Literal["idle", "generating", "paused", "error"]


@dataclass(frozen=True, slots=True)
class Mode:
    id: str
    name: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class Model:
    id: str
    name: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class SessionUpdated:
    """A partial update of the session info; None means "unchanged".

    ``commands`` is the runtime's whole effective inventory; an empty tuple withdraws every
    command.
    """

    commands: tuple[Command, ...] | None = None
    modes: tuple[Mode, ...] | None = None
    current_mode: str | None = None
    models: tuple[Model, ...] | None = None
    current_model: str | None = None
    capabilities: dict[str, bool] | None = None


@dataclass(frozen=True, slots=True)
class MessageDelta:
    text: str


@dataclass(frozen=True, slots=True)
class MessageEnd:
    """The turn finished. ``stop_reason``: end_turn, cancelled, refusal, max_tokens, ..."""

    stop_reason: str = "end_turn"


@dataclass(frozen=True, slots=True)
class ToolStart:
    tool_id: str
    title: str
    kind: str | None = None


@dataclass(frozen=True, slots=True)
class ToolRunning:
    tool_id: str
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class ToolEnd:
    tool_id: str
    status: Literal["completed", "failed"] = "completed"
    output: str | None = None


@dataclass(frozen=True, slots=True)
class PermissionOption:
    option_id: str
    name: str
    kind: str = "allow_once"  # allow_once | allow_always | reject_once | reject_always


@dataclass(frozen=True, slots=True)
class PermissionRequired:
    request_id: str
    title: str
    options: tuple[PermissionOption, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class StatusChanged:
    status: Status
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """A failure of the turn; ends it. ``category`` from the contract's catalog."""

    category: Category
    message: str

    @classmethod
    def from_text(cls, message: str) -> ErrorEvent:
        """For runtimes that only give error text: the category comes from ``categorize``."""
        return cls(categorize(message), message)


RuntimeEvent = (
    SessionUpdated
    | MessageDelta
    | MessageEnd
    | ToolStart
    | ToolRunning
    | ToolEnd
    | PermissionRequired
    | StatusChanged
    | ErrorEvent
)
