"""The runtime port. A backend opens one session per conversation key, reports its inventory
through ``SessionUpdated``, runs composer_input turns as streams of unified events, cancels.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from contract import Command, ComposerInputMessage

from ..events import Mode, Model, RuntimeEvent, SessionUpdated
from ..frozen import quick_init
from ..inbound import Attachment
from ..metrics import StoreObserver

if TYPE_CHECKING:
    from ..state import StateStore

UpdateListener = Callable[[SessionUpdated], None]


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """Who answers, as a person would call it: ``name`` (the bot's, the agent's own), the
    kind of ``runtime`` it is reached through, and what it says of itself where it does.
    """

    name: str
    runtime: str
    version: str | None = None
    description: str = ""


@quick_init
@dataclass(frozen=True, slots=True)
class Turn:
    """One forwarded input. ``command``/``args`` are set when it starts with a supported command."""

    message: ComposerInputMessage
    command: str | None
    args: str
    user: str
    attachments: tuple[Attachment, ...] = ()
    # The core's own composer_input: made by the contract and lowered for the runtime's
    # names, valid by construction (a runtime that checks what it gets may skip it).
    checked: bool = False


@dataclass(slots=True)
class SessionInfo:
    """What the gateway knows of a runtime session; ``commands`` None = not reported yet."""

    commands: tuple[Command, ...] | None = None
    modes: tuple[Mode, ...] = ()
    current_mode: str | None = None
    models: tuple[Model, ...] = ()
    current_model: str | None = None
    capabilities: dict[str, bool] = field(default_factory=dict)

    def apply(self, update: SessionUpdated) -> bool:
        """Merge a partial update; True when the command inventory changed."""
        changed = update.commands is not None and update.commands != self.commands
        if update.commands is not None:
            self.commands = update.commands
        if update.modes is not None:
            self.modes = update.modes
        if update.current_mode is not None:
            self.current_mode = update.current_mode
        if update.models is not None:
            self.models = update.models
        if update.current_model is not None:
            self.current_model = update.current_model
        if update.capabilities is not None:
            self.capabilities = {**self.capabilities, **update.capabilities}
        return changed


class RuntimeSession(ABC):
    """One conversation's session in a runtime. ``run`` is never called concurrently."""

    @abstractmethod
    def run(self, turn: Turn) -> AsyncIterator[RuntimeEvent]:
        """Stream the turn's events. Ends with MessageEnd or ErrorEvent (or just stops).
        A runtime that has the whole turn at hand when called returns ``events.Answered``.
        """

    @abstractmethod
    async def cancel(self) -> None:
        """Ask the runtime to stop the turn in flight; the stream then ends (cancelled)."""

    async def refresh_commands(self) -> None:
        """An input named a command this session did not list: a runtime whose list can
        change without telling it (Electric's entity type) reads it again, at most once per
        interval of its own, and reports a change through ``updates`` before returning.
        """

    async def answer_permission(self, request_id: str, option_id: str | None) -> bool:
        """Answer a PermissionRequired; None means cancelled. False if not pending."""
        return False

    async def set_mode(self, mode_id: str) -> None:
        raise NotImplementedError("this runtime has no modes")

    async def close(self) -> None:
        """Release the session (eviction, shutdown); a later ``open`` may resume it."""

    async def reset(self) -> None:
        """``/new``: release the session and forget it, so that the next ``open`` of this
        conversation starts afresh. Backends that resume sessions by key override this.
        """
        await self.close()


class Runtime(ABC):
    name: str = "runtime"
    strict_names: bool = False
    """The runtime refuses slash_command names outside ``contract.STRICT_NAME`` (send as text)."""

    def use_store(self, store: StateStore) -> None:
        """The gateway's state store, given before ``start``: for a runtime that keeps a
        conversation's state (session ids, dynamic commands) across restarts.
        """

    async def start(self) -> None:
        """Start shared resources (processes, HTTP clients)."""

    async def stop(self) -> None:
        """Stop them; sessions are closed first by the gateway."""

    @abstractmethod
    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        """Open the session for a conversation key. Out-of-turn SessionUpdated go to ``updates``;
        the first inventory should be reported (or ``updates`` called) as soon as it is known.
        """

    async def static_commands(self) -> tuple[Command, ...] | None:
        """Commands known before any session exists (for menus); None when unknown."""
        return None

    async def readiness(self) -> str | None:
        """None when the runtime can open sessions now; else why not (``GET /readyz``,
        ``slashgate check``). Cheap: called on every readiness probe.
        """
        return None

    def observe_store(self, observe: StoreObserver) -> None:
        """Time the runtime's own durable state, if it keeps any (called before ``start``)."""

    def agent_info(self) -> AgentInfo:
        """The agent behind this runtime, for greetings (the web chat's first screen)."""
        return AgentInfo(self.name, self.name)

    def describe(self) -> str:
        return self.name
