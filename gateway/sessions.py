"""The conversations the gateway remembers (a bounded LRU), each with its runtime session:
made on an input's arrival, waited for (open, first command list) within bounds, evicted when
idle and over ``max_sessions``. Also where shutdown begins: inputs stop waiting for sessions.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from contract import Command

from .contracts import Contracts
from .conversation import Conversation
from .inbound import InboundMessage
from .metrics import Metrics
from .runtimes.base import Runtime, SessionInfo
from .settings import CoreSettings
from .tasks import BackgroundTasks

log = logging.getLogger("slashgate.core")

# (conversation key, its session's info or None once forgotten, the commands it lists)
ConversationInventory = Callable[[str, SessionInfo | None, tuple[Command, ...]], None]


class OpenFailed(Exception):
    """The runtime could not open a session; the message says why."""


class Conversations(Mapping[str, Conversation]):
    def __init__(
        self,
        settings: CoreSettings,
        runtime: Runtime,
        metrics: Metrics,
        background: BackgroundTasks,
        contracts: Contracts,
        on_inventory: ConversationInventory,
    ) -> None:
        self._settings = settings
        self._runtime = runtime
        self._metrics = metrics
        self._background = background
        self._contracts = contracts
        self._on_inventory = on_inventory
        self._all: OrderedDict[str, Conversation] = OrderedDict()
        self.closing = False
        self._closed = asyncio.Event()  # set with ``closing``: inputs stop waiting for a session

    def __getitem__(self, key: str) -> Conversation:
        return self._all[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def close(self) -> None:
        """Shutting down: inputs stop waiting for sessions, and new ones are refused."""
        self.closing = True
        self._closed.set()

    def is_closing(self) -> bool:
        return self.closing

    def forget_all(self) -> list[Conversation]:
        """Every conversation, forgotten (shutdown closes them)."""
        conversations = list(self._all.values())
        self._all.clear()
        return conversations

    def queued(self) -> int:
        return sum(c.queued for c in self._all.values())

    def running(self) -> int:
        return sum(c.run is not None for c in self._all.values())

    def enter(self, key: str) -> Conversation:
        """The conversation for ``key``, made if need be, marked in use (never evicted
        meanwhile: the caller must ``conv.users -= 1`` when done); its session may not be
        open yet (``use`` waits for it).
        """
        conv = self._all.get(key)
        if conv is None:
            settings = self._settings
            conv = Conversation(
                key,
                self._runtime,
                self._inventory,
                settings.open_timeout,
                settings.inventory_wait,
                self._session_opened,
                self._metrics.turns(key.partition(":")[0], self._runtime.name),
            )
            self._all[key] = conv
        else:
            self._all.move_to_end(key)
        conv.users += 1
        if len(self._all) > self._settings.max_sessions:  # ``_evict``'s test, without its call
            self._evict()
        return conv

    async def use(self, key: str, message: InboundMessage | None = None) -> Conversation:
        """``enter``, and its session open (or given up waiting for)."""
        conv = self.enter(key)
        try:
            if conv.session is None or not conv.inventory_known.is_set():
                await self.ready(conv, message)
        except BaseException:
            conv.users -= 1
            raise
        return conv

    async def info(self, key: str) -> SessionInfo | None:
        """What the session of conversation ``key`` reported, once open (or given up
        waiting for); None when it cannot open.
        """
        try:
            conv = await self.use(key)
        except OpenFailed:
            return None
        conv.users -= 1
        return conv.info

    async def ready(self, conv: Conversation, message: InboundMessage | None) -> None:
        """Wait for the session and its first command list until ``conv.inventory_due``:
        then the input is classified with what is known, and a turn waits for the session
        within its own deadline (``session``). A gateway command does not wait for a session
        still opening. An open that failed is ``OpenFailed``.
        """
        loop = asyncio.get_running_loop()
        opening = conv.opening()
        if message is not None and not opening.done() and self._contracts.for_gateway(message):
            return
        if not opening.done() and conv.inventory_due > loop.time():
            await self._until(opening, conv.inventory_due)
            if not opening.done():
                log.warning("the session of %s is still opening: going on without it", conv.key)
        if opening.done() and not opening.cancelled() and opening.exception() is not None:
            raise OpenFailed(_open_error(opening.exception()))
        due = conv.inventory_due
        if conv.session is None or conv.inventory_known.is_set() or due <= loop.time():
            return
        known = asyncio.ensure_future(conv.inventory_known.wait())
        try:
            await self._until(known, due)
        finally:
            known.cancel()
        if not conv.inventory_known.is_set():
            log.warning("no command inventory from the runtime for %s yet", conv.key)

    async def _until(self, waited: asyncio.Future[Any], due: float) -> None:
        """Wait for ``waited`` until loop time ``due``, or until shutdown begins."""
        timeout = due - asyncio.get_running_loop().time()
        if self._closed.is_set() or timeout <= 0:
            return
        closed = asyncio.ensure_future(self._closed.wait())
        try:
            await asyncio.wait(
                (waited, closed), timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            closed.cancel()

    async def session(self, conv: Conversation, deadline: asyncio.Timeout) -> None:
        """Wait for the conversation's open, at most ``run_timeout`` from when it began (so a
        stuck open is the timeout text that long after the input that started it); once
        open, the turn has its whole ``run_timeout``. The deadline leaves the open going:
        other inputs share it, and it has a deadline of its own.
        """
        opening = conv.opening()
        run_timeout = self._settings.run_timeout
        deadline.reschedule(conv.open_started + run_timeout)
        try:
            await asyncio.shield(opening)
            deadline.reschedule(asyncio.get_running_loop().time() + run_timeout)
        except asyncio.CancelledError:
            if not opening.cancelled():
                raise  # this turn's deadline, or its cancel
            raise OpenFailed("the session was closed while it opened") from None
        except Exception as exc:
            self._metrics.runtime_crashed(self._runtime.name, "open")
            raise OpenFailed(_open_error(exc)) from exc

    def _session_opened(self, again: bool) -> None:
        self._metrics.session_opened(self._runtime.name, again)

    def _inventory(self, key: str, commands: tuple[Command, ...]) -> None:
        conv = self._all.get(key)
        self._on_inventory(key, conv.info if conv else None, commands)

    def _evict(self) -> None:
        while len(self._all) > self._settings.max_sessions:
            for key, conv in self._all.items():
                if not conv.busy and not conv.users:
                    del self._all[key]
                    self._background.spawn(conv.reset())
                    break
            else:
                return

    def pending_permission(self, key: str, request_id: str) -> frozenset[str] | None:
        """The option ids of a pending permission request; None when it is not pending."""
        conv = self._all.get(key)
        return None if conv is None else conv.permissions.get(request_id)

    async def answer_permission(self, key: str, request_id: str, option_id: str | None) -> bool:
        """Send a permission choice to the runtime; False when the request is no longer
        pending.
        """
        conv = self._all.get(key)
        if conv is None or conv.session is None or request_id not in conv.permissions:
            return False
        answered = await conv.session.answer_permission(request_id, option_id)
        if answered:
            conv.permissions.pop(request_id, None)
        return answered


def _open_error(exc: BaseException | None) -> str:
    if isinstance(exc, TimeoutError):
        return "the runtime session did not open in time (timed out)"
    return str(exc) or type(exc).__name__
