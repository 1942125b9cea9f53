"""Outbound calls paced under a platform's rate limits, fairly between conversations.

A call waits in two stages (docs/rate-limits.md): its chat's lane (the per-chat limit, one
caller at a time, the urgent first), then the bot's budget (the global limit, shared between
replicas through Redis where there are several, see ``shared``), where each conversation has
at most one call waiting, so a chatty one cannot take everyone's turn. Final replies are
urgent; previews are not, so under pressure they wait and the sink shows the latest text in
the slot it gets (``slot``): the intermediate edits are skipped, the final text never.
A 429 pauses its chat for the Retry-After; 429s in several chats at once pause the bot.

Every limit spaces calls evenly (an aiolimiter leaky bucket of one): a burst at the limit
leaves no room for the timing jitter between here and the platform.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from aiolimiter import AsyncLimiter

from gateway.store import BoundedTTLMap

from .gate import Gate

MAX_PAUSE = 600.0  # seconds: a Retry-After is remembered at most this long
FLOOD_SPREAD = 3  # chats paused at once that mean the bot's own limit was hit


@dataclass(frozen=True, slots=True)
class Rate:
    """At most ``count`` calls per ``period`` seconds, evenly spaced; a count of 0 is no
    limit.
    """

    count: float
    period: float = 1.0

    @property
    def interval(self) -> float:
        return self.period / self.count if self.count > 0 else 0.0

    def limiter(self) -> AsyncLimiter | None:
        return AsyncLimiter(1, self.interval) if self.count > 0 else None


class Budget(Protocol):
    """The global limit: ``take`` returns when one more call may go."""

    async def prepare(self) -> None: ...

    async def take(self) -> None: ...

    async def aclose(self) -> None: ...


class LocalBudget:
    """The global limit of one process."""

    def __init__(self, rate: Rate) -> None:
        self._limiter = rate.limiter()

    async def prepare(self) -> None:
        return None

    async def take(self) -> None:
        if self._limiter is not None:
            await self._limiter.acquire()

    async def aclose(self) -> None:
        return None


@dataclass(slots=True)
class _Lane:
    limiter: AsyncLimiter | None
    interval: float
    gate: Gate = field(default_factory=Gate)
    users: int = 0


@dataclass(slots=True)
class _Ticket:
    urgent: bool
    prepaid: str | None = None  # a lane whose slot the next call there has already taken


_TICKET: ContextVar[_Ticket | None] = ContextVar("slashgate_pacing_ticket", default=None)


@contextmanager
def previewing() -> Iterator[None]:
    """Calls made inside (this task and the tasks it starts) are previews: not urgent."""
    token = _TICKET.set(_Ticket(urgent=False))
    try:
        yield
    finally:
        _TICKET.reset(token)


class Pacer:
    def __init__(self, budget: Budget, size: int = 10_000) -> None:
        self.budget = budget
        self._gate = Gate()
        self._busy: dict[str, _Lane] = {}  # lanes someone waits in or holds
        self._idle: BoundedTTLMap[_Lane] = BoundedTTLMap(size, MAX_PAUSE)
        self._size = size
        # Chats told to wait: until when (loop time), the most recently paused last.
        self._pauses: dict[str, float] = {}
        self._paused_all = 0.0

    @property
    def waiting(self) -> int:
        """Calls waiting for the global budget (one per conversation at most)."""
        return self._gate.waiting

    async def pace(self, key: str, rate: Rate) -> None:
        """Wait until a call to ``key`` may go: urgent unless made inside ``previewing`` or
        ``slot`` (whose slot the first such call uses).
        """
        ticket = _TICKET.get()
        if ticket is not None and ticket.prepaid == key:
            ticket.prepaid = None
            return
        await self.acquire(key, rate, urgent=ticket is None or ticket.urgent)

    @asynccontextmanager
    async def slot(self, key: str, rate: Rate) -> AsyncIterator[None]:
        """A preview's slot, taken before its text is made (so that it shows the latest):
        the first call to ``key`` inside uses it, later ones are previews too.
        """
        await self.acquire(key, rate, urgent=False)
        token = _TICKET.set(_Ticket(urgent=False, prepaid=key))
        try:
            yield
        finally:
            _TICKET.reset(token)

    async def acquire(self, key: str, rate: Rate, urgent: bool = True) -> None:
        """Wait for ``key``'s lane, then for the global budget; a caller cancelled on the way
        takes no slot from anyone.
        """
        lane = self._lane(key, rate)
        loop = asyncio.get_running_loop()
        try:
            async with lane.gate.turn(urgent):
                await self._unpaused(key)
                if lane.limiter is not None:
                    await lane.limiter.acquire()
                since = loop.time()
                async with self._gate.turn(urgent):
                    await self._unpaused(None)
                    await self.budget.take()
                await self._unpaused(key)  # a 429 came meanwhile
                if lane.limiter is not None and lane.interval > 0:
                    # The chat's interval counts from now, when the call goes, not from when
                    # the lane let it on to the global line.
                    await lane.limiter.acquire(min(1.0, (loop.time() - since) / lane.interval))
        finally:
            self._release(key, lane)

    def pause(self, key: str, seconds: float) -> None:
        """The platform said to wait (a 429's Retry-After) in ``key``'s chat; when several
        chats are told so at once, the bot's own limit was hit: pause every chat.
        """
        now = asyncio.get_running_loop().time()
        until = now + min(max(seconds, 0.0), MAX_PAUSE)
        self._pauses = {k: when for k, when in self._pauses.items() if when > now}
        self._pauses[key] = max(until, self._pauses.pop(key, 0.0))
        if len(self._pauses) >= FLOOD_SPREAD:
            self._paused_all = max(self._paused_all, until)
        while len(self._pauses) > self._size:  # the oldest pause goes first
            del self._pauses[next(iter(self._pauses))]

    async def aclose(self) -> None:
        await self.budget.aclose()

    async def _unpaused(self, key: str | None) -> None:
        loop = asyncio.get_running_loop()
        while True:
            until = self._paused_all if key is None else self._pauses.get(key, 0.0)
            if until <= loop.time():
                if key is not None:
                    self._pauses.pop(key, None)  # over: forgotten without waiting for a 429
                return
            await asyncio.sleep(until - loop.time())

    def _lane(self, key: str, rate: Rate) -> _Lane:
        """``key``'s lane; a busy one is kept whatever ``rate`` says (one lane per chat, so
        one call at a time): a new rate applies once it is idle.
        """
        lane = self._busy.get(key)
        if lane is None:
            lane = self._idle.pop(key)
            if lane is None or lane.interval != rate.interval:
                lane = _Lane(rate.limiter(), rate.interval)
            self._busy[key] = lane
        lane.users += 1
        return lane

    def _release(self, key: str, lane: _Lane) -> None:
        lane.users -= 1
        if not lane.users:
            del self._busy[key]
            self._idle.set(key, lane)  # its last call still counts against the next
