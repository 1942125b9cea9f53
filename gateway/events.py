"""Unified runtime events: every backend normalizes its protocol into these, channels render them.

Plain frozen dataclasses: they are created per streamed chunk, so they stay cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from contract import Category, Command, categorize

from .frozen import quick_init

Status = Literal["idle", "generating", "paused", "error", "retrying", "waiting_for_permission"]


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


@quick_init  # one per streamed chunk
@dataclass(frozen=True, slots=True)
class MessageDelta:
    text: str


@quick_init  # one per turn
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
class ReasoningDelta:
    """A chunk of the agent's reasoning (ACP ``agent_thought_chunk``, pi ``thinking_delta``)."""

    text: str


@dataclass(frozen=True, slots=True)
class PlanEntry:
    content: str
    status: Literal["pending", "in_progress", "completed"] = "pending"
    priority: Literal["high", "medium", "low"] = "medium"


@dataclass(frozen=True, slots=True)
class PlanUpdated:
    """The agent's whole current plan (each update replaces the last one); no entries and no
    ``text`` means the plan was removed. ``text`` is a plan given as Markdown instead of entries.
    """

    entries: tuple[PlanEntry, ...] = ()
    text: str | None = None


@dataclass(frozen=True, slots=True)
class UsageReported:
    """What the turn cost, as far as the runtime tells; None means "not reported" (left
    out of the webhook's JSON, whose ``usage`` is this).

    Tokens of the turn, and the context window (``context_used`` of ``context_size``).
    Later reports in a turn complete earlier ones field by field (``merged``).
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    thought_tokens: int | None = None
    context_used: int | None = None
    context_size: int | None = None
    cost: float | None = None
    currency: str | None = None

    def merged(self, later: UsageReported) -> UsageReported:
        values = ((getattr(self, n), getattr(later, n)) for n in UsageReported.__slots__)
        return UsageReported(*(old if new is None else new for old, new in values))


@dataclass(frozen=True, slots=True)
class FileReturned:
    """A file the agent returns with its reply (an image it made, a document it wrote): the
    channel sends it as a file of its platform, within the attachment limits.
    """

    name: str
    media_type: str
    data: bytes


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
    | ReasoningDelta
    | PlanUpdated
    | UsageReported
    | FileReturned
    | ErrorEvent
)


class Answered:
    """A turn's whole stream, known when ``RuntimeSession.run`` returns it: the runtime
    answered without waiting for anything. The core then reads the events in place (no
    deadline, no pass of the event loop); anyone else iterates it as the stream it is.
    """

    __slots__ = ("_next", "events")

    def __init__(self, events: list[RuntimeEvent]) -> None:
        self.events = events
        self._next = 0

    def __aiter__(self) -> Answered:
        return self

    async def __anext__(self) -> RuntimeEvent:
        if self._next >= len(self.events):
            raise StopAsyncIteration
        self._next += 1
        return self.events[self._next - 1]
