"""One conversation's state in the core: its runtime session, inventory, and the run slot."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from contract import Command, SlashContract

from .events import SessionUpdated
from .runtimes.base import Runtime, RuntimeSession, SessionInfo

PERMISSION_WINDOW = 64  # pending permission requests remembered per conversation


@dataclass(slots=True)
class RunState:
    command: str | None
    started: float = field(default_factory=time.monotonic)
    parts: list[str] = field(default_factory=list)
    task: asyncio.Task[object] | None = None
    stopping: bool = False  # a cancel was asked for: the stream's end means "cancelled"
    forced: bool = False  # the runtime ignored it: the task was cancelled after the grace
    done: asyncio.Event = field(default_factory=asyncio.Event)


class Conversation:
    def __init__(
        self,
        key: str,
        runtime: Runtime,
        on_inventory: Callable[[str, tuple[Command, ...]], None],
    ) -> None:
        self.key = key
        self.runtime = runtime
        self._on_inventory = on_inventory
        self.info = SessionInfo()
        self.session: RuntimeSession | None = None
        self.inventory_known = asyncio.Event()
        self.run: RunState | None = None
        self.permissions: OrderedDict[str, None] = OrderedDict()
        self.users = 0  # inputs being handled right now: never evicted meanwhile
        self._owned = False
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._contracts: dict[str | None, SlashContract] = {}
        self._opening: asyncio.Lock = asyncio.Lock()

    # -- runtime session ------------------------------------------------------------------

    async def open(self) -> RuntimeSession:
        async with self._opening:
            if self.session is None:
                self.session = await self.runtime.open(self.key, self.apply)
            return self.session

    def apply(self, update: SessionUpdated) -> None:
        """Merge a runtime's SessionUpdated; drops cached contracts when the inventory changed."""
        if self.info.apply(update):
            self._contracts.clear()
            self._on_inventory(self.key, self.info.commands or ())
        elif update.modes is not None:
            self._contracts.clear()  # /mode is a host command only while there are modes
        if self.info.commands is not None:
            self.inventory_known.set()

    async def reset(self, forget: bool = False) -> None:
        """Close the runtime session (``forget``: for good, ``/new``); the next input opens
        a session again.
        """
        session, self.session = self.session, None
        self.info = SessionInfo()
        self.inventory_known = asyncio.Event()
        self._contracts.clear()
        self.permissions.clear()
        if session is not None:
            await (session.reset() if forget else session.close())

    def contract(
        self, base: SlashContract, host: tuple[Command, ...], bot_username: str | None
    ) -> SlashContract:
        cached = self._contracts.get(bot_username)
        if cached is None:
            cached = SlashContract(
                commands=self.info.commands or (),
                interactive_only=base.interactive_only,
                host_commands=host,
                bot_username=bot_username,
                catalog=base.catalog,
            )
            self._contracts[bot_username] = cached
        return cached

    # -- the run slot: one run at a time, FIFO ---------------------------------------------

    @property
    def busy(self) -> bool:
        return self._owned or bool(self._waiters)

    @property
    def queued(self) -> int:
        return len(self._waiters)

    def try_acquire(self) -> bool:
        if self.busy:
            return False
        self._owned = True
        return True

    async def acquire(self, front: bool = False) -> None:
        if self.try_acquire():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if front:
            self._waiters.appendleft(waiter)
        else:
            self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()  # ownership was handed over as we were cancelled: pass it on
            elif waiter in self._waiters:  # release() may have dropped it already
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # ownership passes straight to the next in line
                return
        self._owned = False

    def remember_permission(self, request_id: str) -> None:
        self.permissions[request_id] = None
        while len(self.permissions) > PERMISSION_WINDOW:
            self.permissions.popitem(last=False)
