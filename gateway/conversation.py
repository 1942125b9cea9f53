"""One conversation's state in the core: its runtime session, inventory, and the run slot."""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from contract import Command, SlashContract

from .events import SessionUpdated, UsageReported
from .host import RESERVED
from .inventory import hygienic
from .metrics import TurnMetrics
from .runtimes.base import Runtime, RuntimeSession, SessionInfo

log = logging.getLogger("slashgate.core")

PERMISSION_WINDOW = 64  # pending permission requests remembered per conversation


class Flag:
    """``asyncio.Event``'s ``set``/``is_set``/``wait``, allocating nothing until somebody
    waits: there is one per turn and one per conversation, and an Event's deque is 760 bytes.
    """

    __slots__ = ("_set", "_waiters")

    def __init__(self) -> None:
        self._set = False
        self._waiters: list[asyncio.Future[None]] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        waiters, self._waiters = self._waiters, None
        for waiter in waiters or ():
            if not waiter.done():
                waiter.set_result(None)

    async def wait(self) -> None:
        if self._set:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            if self._waiters is not None and waiter in self._waiters:  # timed out, cancelled
                self._waiters.remove(waiter)


@dataclass(slots=True)
class RunState:
    command: str | None
    started: float = field(default_factory=time.monotonic)
    parts: list[str] = field(default_factory=list)
    task: asyncio.Task[object] | None = None
    usage: UsageReported | None = None
    acted: bool = False  # tools or a plan showed: a turn without text still did something
    stopping: bool = False  # a cancel was asked for: the stream's end means "cancelled"
    forced: bool = False  # the runtime ignored it: the task was cancelled after the grace
    over: bool = False  # the turn ended (``run.py`` sets it, and ``ended`` once made)
    ended: Flag | None = None  # made for the first who waits for the end: most turns, none

    async def finished(self) -> None:
        """Until the turn is over."""
        if self.over:
            return
        if self.ended is None:
            self.ended = Flag()
        await self.ended.wait()


class Conversation:
    # Slots: there is one per conversation the gateway remembers (``max_sessions``).
    __slots__ = (
        "_inventory_wait",
        "_on_inventory",
        "_on_open",
        "_open_timeout",
        "_opened_before",
        "_opening",
        "_owned",
        "_waiters",
        "after_cancel",
        "aliases",
        "contract_cache",
        "delivering",
        "info",
        "inventory_due",
        "inventory_known",
        "key",
        "open_started",
        "permissions",
        "run",
        "runtime",
        "session",
        "turns",
        "users",
    )

    def __init__(
        self,
        key: str,
        runtime: Runtime,
        on_inventory: Callable[[str, tuple[Command, ...]], None],
        open_timeout: float = 120.0,
        inventory_wait: float = 5.0,
        on_open: Callable[[bool], None] | None = None,
        turns: TurnMetrics | None = None,
    ) -> None:
        self.key = key
        self.turns = turns  # this conversation's turn histograms (a gateway's metrics)
        self.runtime = runtime
        self._on_inventory = on_inventory
        self._open_timeout = open_timeout
        self._inventory_wait = inventory_wait
        self._on_open = on_open  # called with True when a session opens again (metrics)
        self._opened_before = False
        self.info = SessionInfo()
        self.session: RuntimeSession | None = None
        self.inventory_known = Flag()
        self.open_started = 0.0  # loop time the session's (last) open began
        self.inventory_due = 0.0  # loop time until which inputs wait for the first command list
        self._opening: asyncio.Future[RuntimeSession] | None = None  # None once open
        self.run: RunState | None = None
        # The last turn's reply while it is still going out (the run slot is free by then):
        # the next turn's output waits for it (``delivery.Behind``).
        self.delivering: asyncio.Future[None] | None = None
        # Pending permission requests: id -> the option ids offered, oldest first.
        self.permissions: dict[str, frozenset[str]] = {}
        self.aliases: dict[str, str] = {}  # inventory name -> the agent's own (hygiene)
        self.after_cancel = False  # the last turn ended cancelled
        self.users = 0  # inputs being handled right now: never evicted meanwhile
        self._owned = False
        self._waiters: deque[asyncio.Future[bool]] | None = None  # made when one waits
        # The contract of this conversation's inventory, for one bot username (a
        # conversation key belongs to one channel, so to one bot), made and kept by
        # ``Contracts.of``; dropped here when the inventory changes. Weak: see there.
        self.contract_cache: tuple[str | None, weakref.ref[SlashContract]] | None = None

    # -- runtime session ------------------------------------------------------------------

    def opening(self) -> asyncio.Future[RuntimeSession]:
        """The session's open: started on first need in a task of its own and shared by every
        input that waits for it, so that a runtime slow to open (or one that never does) holds
        up this conversation's inputs only, each within its own deadline. It gives up after
        ``open_timeout``; a failed open is forgotten and the next input tries again. Inputs
        wait for the first command list until ``inventory_due``, ``inventory_wait`` after the
        open began.
        """
        task = self._opening
        if task is None:
            loop = asyncio.get_running_loop()
            if self.session is not None:  # open: its finished task is not kept
                done: asyncio.Future[RuntimeSession] = loop.create_future()
                done.set_result(self.session)
                return done
            self.open_started = loop.time()
            self.inventory_due = self.open_started + self._inventory_wait
            task = self._opening = loop.create_task(self._open())
            task.add_done_callback(self._opened)
        return task

    async def open(self) -> RuntimeSession:
        """The open session, waiting for the open (which this caller's cancel leaves going)."""
        return await asyncio.shield(self.opening())

    async def _open(self) -> RuntimeSession:
        async with asyncio.timeout(self._open_timeout):
            session = await self.runtime.open(self.key, self.apply)
        self.session = session
        if self._on_open is not None:
            self._on_open(self._opened_before)
        self._opened_before = True
        return session

    def _opened(self, task: asyncio.Future[RuntimeSession]) -> None:
        if task.cancelled():  # by reset, which forgot it already
            return
        exc = task.exception()  # retrieved here: the inputs that waited may all have left
        if self._opening is task:
            self._opening = None  # open (an idle conversation keeps no task), or to try again
        if exc is None:
            return
        if isinstance(exc, TimeoutError):
            log.warning("no runtime session for %s after %ss", self.key, self._open_timeout)
        else:
            log.error("cannot open a runtime session for %s", self.key, exc_info=exc)

    def apply(self, update: SessionUpdated) -> None:
        """Merge a runtime's SessionUpdated; drops cached contracts when the inventory changed."""
        if update.commands is not None:
            commands, self.aliases = hygienic(update.commands, RESERVED)
            update = replace(update, commands=commands)
        had_modes = bool(self.info.modes)
        changed = self.info.apply(update)
        # Modes coming or going change the list too: /mode is offered only while there are.
        if changed or (self.info.commands is not None and bool(self.info.modes) != had_modes):
            self.contract_cache = None
            self._on_inventory(self.key, self.info.commands or ())
        elif update.modes is not None:
            self.contract_cache = None  # /mode is a host command only while there are modes
        if self.info.commands is not None:
            self.inventory_known.set()

    async def reset(self, forget: bool = False) -> None:
        """Close the runtime session (``forget``: for good, ``/new``); the next input opens
        a session again.
        """
        opening, self._opening = self._opening, None
        if opening is not None and not opening.done():
            opening.cancel()
            await asyncio.wait({opening})  # the runtime's own clean-up of a half-open session
        session, self.session = self.session, None
        self.info = SessionInfo()
        self.inventory_known = Flag()
        self.contract_cache = None
        self.permissions.clear()
        self.after_cancel = False  # a new session owes nothing to the old one's cancel
        if session is not None:
            await (session.reset() if forget else session.close())

    # -- the run slot: one run at a time, FIFO ---------------------------------------------

    @property
    def busy(self) -> bool:
        return self._owned or bool(self._waiters)

    @property
    def queued(self) -> int:
        return len(self._waiters) if self._waiters else 0

    def try_acquire(self) -> bool:
        if self._owned or self._waiters:  # ``busy``, without its call: every turn asks
            return False
        self._owned = True
        return True

    async def acquire(self, front: bool = False) -> None:
        if not self.try_acquire():
            await self.wait(self.line_up(front))  # nothing withdraws this waiter

    def line_up(self, front: bool = False) -> asyncio.Future[bool]:
        """Take a place in the queue for the run slot, which is taken (``try_acquire``
        failed), now (at its ``front``: ahead of the others): ``wait`` for the future it
        returns, or ``leave_line``.
        """
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = deque()
        if front:
            self._waiters.appendleft(waiter)
        else:
            self._waiters.append(waiter)
        return waiter

    async def wait(self, waiter: asyncio.Future[bool]) -> bool:
        """Until the slot is handed to ``waiter`` (``line_up``): True; False when it was
        withdrawn from the queue first (``withdraw``), and the slot is not its.
        """
        try:
            return await waiter
        except BaseException:
            self.leave_line(waiter)
            raise

    def withdraw(self, waiter: asyncio.Future[bool]) -> bool:
        """Take ``waiter`` out of the queue before the slot came to it (its input was
        withdrawn): its ``wait`` returns False. False when the slot is its already.
        """
        if waiter.done() or not self._waiters or waiter not in self._waiters:
            return False
        self._waiters.remove(waiter)
        waiter.set_result(False)
        return True

    def leave_line(self, waiter: asyncio.Future[bool]) -> None:
        """``waiter`` gives up its place (cancelled): the slot goes on if it had it already."""
        if waiter.done() and not waiter.cancelled():
            if waiter.result():  # handed over as we were cancelled (not withdrawn): pass it on
                self.release()
        elif self._waiters and waiter in self._waiters:  # release() may have dropped it
            self._waiters.remove(waiter)

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(True)  # ownership passes straight to the next in line
                return
        self._waiters = None
        self._owned = False

    def remember_permission(self, request_id: str, options: frozenset[str]) -> None:
        self.permissions[request_id] = options
        while len(self.permissions) > PERMISSION_WINDOW:
            del self.permissions[next(iter(self.permissions))]
