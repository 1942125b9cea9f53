"""The gateway as a channel sees it: the one interface of the core that channels import (with
``contract`` and the helpers tests/test_layout.py names), as hikari publishes its interfaces
apart from their implementation. The core implements ``GatewayAPI`` (gateway/core.py); a
channel is given it, never the core itself. Runtimes implement ``Runtime`` and
``RuntimeSession``.

The types of the port are defined where the core uses them and published here: what a
channel hands the core (``InboundMessage``, ``Attachment``), what comes back (``ReplySink``'s
hooks, ``Reply``, ``Outcome``, the runtime's events), its journal entries (``Entry``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

from aiohttp import web

from contract import Category, Command

from .events import (
    FileReturned,
    PermissionOption,
    PermissionRequired,
    PlanEntry,
    PlanUpdated,
    ReasoningDelta,
    RuntimeEvent,
    Status,
    StatusChanged,
    ToolEnd,
    ToolRunning,
    ToolStart,
    UsageReported,
)
from .host import RESERVED, Labeler
from .inbound import Attachment, InboundMessage, Outcome, Reply, ReplySink
from .menus import ConversationListener, InventoryListener
from .runtimes.base import AgentInfo, Runtime, RuntimeSession, SessionInfo
from .settings import CoreSettings
from .state import Encoded, Entry, StoreUnavailable

__all__ = [
    "ERROR_ANSWERS",
    "RESERVED",
    "Admission",
    "AgentInfo",
    "Attachment",
    "Channel",
    "Encoded",
    "Entry",
    "ErrorAnswer",
    "FileReturned",
    "GatewayAPI",
    "InboundMessage",
    "Labeler",
    "Meter",
    "Outcome",
    "OwnerOnly",
    "PermissionOption",
    "PermissionRequired",
    "PlanEntry",
    "PlanUpdated",
    "ReasoningDelta",
    "Reply",
    "ReplySink",
    "Runtime",
    "RuntimeEvent",
    "RuntimeSession",
    "SessionInfo",
    "Status",
    "StatusChanged",
    "Store",
    "StoreUnavailable",
    "ToolEnd",
    "ToolRunning",
    "ToolStart",
    "UsageReported",
]


class Store(Protocol):
    """The state store as channels use it: answers kept for a while (the webhook's
    Idempotency-Keys), and whether replicas share it (a platform's budget is shared then).
    """

    @property
    def shared(self) -> bool: ...

    async def recall(self, key: str) -> Any | None: ...

    async def remember(self, key: str, value: Any, ttl: float) -> None: ...

    async def forget(self, key: str) -> None: ...


class Meter(Protocol):
    """The metrics a channel counts in: its platform's calls, and requests it refuses."""

    def platform_request(self, platform: str, method: str, outcome: str) -> None: ...

    def platform_retry(self, platform: str, method: str, reason: str) -> None: ...

    def http_refused(self, reason: str) -> None: ...


class OwnerOnly(Protocol):
    """A channel's access policy, as its menus ask it."""

    def owner_only(self, command: str, shared: bool) -> bool: ...


class Admission(Protocol):
    """The access policy as a channel asks it: before it fetches a message's files, and for
    what its menus and completions offer a sender.
    """

    async def lets_talk(self, message: InboundMessage) -> bool: ...

    async def is_owner(self, channel: str, user: str) -> bool: ...

    async def allow_group(self, channel: str, group: str, by: str) -> None: ...

    def may_run(self, message: InboundMessage, command: str) -> bool: ...

    def offered(self, message: InboundMessage, commands: Iterable[Command]) -> tuple[Command, ...]:
        """``commands`` less those the sender may not run (what /help lists to them)."""

    def policy(self, channel: str) -> OwnerOnly: ...


class GatewayAPI(Protocol):
    """The gateway as channels use it."""

    @property
    def settings(self) -> CoreSettings: ...

    @property
    def store(self) -> Store: ...

    @property
    def metrics(self) -> Meter: ...

    @property
    def access(self) -> Admission: ...

    @property
    def agent(self) -> AgentInfo:
        """The agent behind the runtime, as a person would call it (greetings)."""

    @property
    def closing(self) -> bool:
        """Shutting down: new input is refused."""

    @property
    def shared(self) -> bool:
        """Replicas share the store: one-replica work goes under ``lead``."""

    # -- an input's life --------------------------------------------------------------------

    async def accept(
        self,
        channel: str,
        conversation: str,
        body: dict[str, Any],
        claim: str | None = None,
        value: Any = 1,
    ) -> Entry | None:
        """Take a platform input in before the platform is acknowledged: claimed (``claim``,
        with ``value`` kept under it), journaled, and its journal entry returned; None when
        the claim says it came before (counted as a dedupe hit of ``channel``).
        StoreUnavailable: nothing was written, acknowledge nothing (the platform delivers
        again).
        """

    async def claim(self, channel: str, claim: str) -> bool:
        """An input that is not journaled (a button press) claimed: False when it came
        before (counted as a dedupe hit of ``channel``). Raises StoreUnavailable.
        """

    async def done(self, entry: Entry) -> None:
        """The input of ``entry`` needs nothing more: it is not recovered at the next start."""

    async def handle(
        self,
        message: InboundMessage | Awaitable[InboundMessage],
        sink: ReplySink | None = None,
        entry: Entry | None = None,
    ) -> Outcome:
        """Run one input through the contract and, if it may run, the runtime; ``entry`` is
        its journal entry (``accept``), finished here once its user was told. ``message`` may
        be what makes it (its files fetched): whatever fails on the way, the user hears once
        (the sink's ``finished`` says whether the final reply reached them).
        """

    def withdraw(self, channel: str, message_id: str, user: str) -> str | None:
        """Take back the input ``message_id`` (its ``InboundMessage.message_id``) that
        ``user`` sent in ``channel``, while it still waits for its turn (the person deleted or
        edited it): it never reaches the runtime, ``handle`` returns without a reply (its
        sink's ``final`` is not called) and its journal entry ends. The id of the
        conversation it was in; None when no such input waits (never handed in, someone
        else's, running, answered). The message ids must name one input in the channel.
        """

    async def preview(self, message: InboundMessage) -> Outcome:
        """What ``handle`` would do with ``message``, running nothing."""

    def failure_reply(
        self, category: Category, name: str | None = None, error: str | None = None
    ) -> Reply:
        """A failure worded by the contract, for an input that failed outside ``handle``."""

    # -- menus ------------------------------------------------------------------------------

    def menu(self) -> tuple[Command, ...] | None:
        """The effective inventory for menus; None until the runtime has reported one."""

    async def commands(
        self, channel: str | None = None, conversation: str | None = None
    ) -> tuple[Command, ...]:
        """One conversation's effective inventory; without one, the menu."""

    async def offered(self, message: InboundMessage) -> tuple[Command, ...]:
        """What ``/help`` lists to ``message``'s sender in its conversation."""

    def host_commands(self, info: SessionInfo | None = None) -> tuple[Command, ...]:
        """The gateway's commands offered in a session that reported ``info``."""

    def subscribe(self, listener: InventoryListener) -> None:
        """Called with the effective inventory whenever the runtime's changes."""

    def subscribe_conversation(self, listener: ConversationListener) -> None:
        """Called with (conversation key, its inventory) whenever one conversation's changes."""

    def label(self, channel: str, labeler: Labeler) -> None:
        """How ``channel`` spells a command in one conversation (``/help`` lists it so)."""

    async def stop_turns(self, channel: str, where: Callable[[str], bool]) -> int:
        """Stop the turns running in ``channel``'s conversations that ``where`` names (by
        conversation id): the bot was removed from where they would answer. How many ran.
        """

    # -- permissions and replicas -------------------------------------------------------------

    def pending_permission(
        self, channel: str, conversation: str, request_id: str
    ) -> frozenset[str] | None:
        """The option ids of a pending permission request; None when it is not pending."""

    async def answer_permission(
        self, channel: str, conversation: str, request_id: str, option_id: str | None
    ) -> bool:
        """Send a permission choice to the runtime; False when it is no longer pending."""

    async def lead(
        self,
        name: str,
        elected: Callable[[], Awaitable[None]],
        deposed: Callable[[], Awaitable[None]],
    ) -> None:
        """Hold the lease ``name`` whenever no other replica does, until cancelled: work for
        one replica starts with ``elected`` and stops with ``deposed``.
        """


ErrorAnswer = Callable[[web.Request, Exception], web.StreamResponse | None]
"""A channel's own answer to a failure of one of its routes (the webhook's JSON
error bodies), or None to leave the failure as it is.
"""
ERROR_ANSWERS = web.AppKey("slashgate_error_answers", list[ErrorAnswer])


SettingsT = TypeVar("SettingsT", bound=CoreSettings)


class Channel(Generic[SettingsT]):
    """A channel, typed by its own settings model (``Channel[TelegramSettings]``): the
    gateway's settings and the channel's fields. An adapter translates platform <-> core and
    renders replies.
    """

    name: str = "channel"
    # The platform signs every request to this channel's routes (a secret header, a
    # signature over the body), and the routes check it: the server's checks for browsers
    # (Host, Origin, the proxy rule; slashgate/guard.py) leave them alone.
    signed: bool = False

    def __init__(self, gateway: GatewayAPI, settings: SettingsT) -> None:
        self.gateway = gateway
        self.settings = settings

    def mount(self, app: web.Application) -> None:
        """Add the channel's routes to the gateway's aiohttp application."""

    async def start(self) -> None:
        """Start background work (polling, sockets, menu publishing) once the server runs."""

    async def stop(self) -> None:
        """Stop it; pending deliveries are finished or handed back to the platform."""

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, ReplySink] | None:
        """A journaled input of this channel after a restart: the message and a sink that
        delivers its reply, or None when it cannot be answered any more.
        """
        return None

    async def readiness(self) -> str | None:
        """None when the channel is connected to its platform (``GET /readyz``); else what
        is missing. Cheap: called on every readiness probe, answered from what the channel
        knows already.
        """
        return None

    async def check(self) -> str:
        """Reach the platform once with the configured credentials (``slashgate check``):
        what was found (the bot's name, the workspace), or raise saying what failed. Called
        on a channel that was never started.
        """
        return "no platform to reach"

    def describe(self) -> str:
        return self.name

    def links(self, base: str) -> list[tuple[str, str]]:
        """What a person may open, by name, under the server's ``base`` URL: printed at
        start-up as ``name: address`` (the web chat's page, the API's base).
        """
        return []
