"""Outbound calls paced under a platform's rate limits, fairly between conversations.

A call waits in two stages (docs/rate-limits.md): its chat's lane (the per-chat limit, one
caller at a time, the urgent first), then the bot's budget (the global limit, shared between
replicas through Redis where there are several, see ``shared``), where each conversation has
at most one call waiting, so a chatty one cannot take everyone's turn. Each limit is a token
bucket (``Bucket``): the burst the platform allows goes at once, then one call an interval.

Final replies are urgent; previews are not. A preview takes a token only while the bucket
keeps some for finals (``reserve_of``), and a preview waiting at the head of a line gives way
as soon as a final joins it, so a final never waits behind a preview; under pressure previews
wait, and the sink shows the latest text in the slot it gets (``slot``): the intermediate
edits are skipped, the final text never. A 429 pauses its chat for the Retry-After; 429s in
several chats at once pause the bot.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from gateway.store import BoundedTTLMap

from .gate import Gate, Preempted

MAX_PAUSE = 600.0  # seconds: a Retry-After is remembered at most this long
FLOOD_SPREAD = 3  # chats paused at once that mean the bot's own limit was hit


@dataclass(slots=True)
class Bucket:
    """A token bucket: ``burst`` calls at once, then one an interval (GCRA: one number, the
    time at which the bucket is full again). In a bucket with a burst, a call counts from when
    it was answered, the latest moment the platform can have counted it (``settle``): the
    gateway's figures then never run ahead of the platform's at the edge of a burst, whatever
    the jitter of the network and of the event loop. A bucket of one (an even spacing:
    Telegram's 30 a second for the whole bot) counts from when the call went: counting from
    the answer there would add the round trip to every interval (a third of the rate at 30 a
    second and 60 ms to Telegram), and the platform's own tolerance ("or so") covers the
    jitter. Here, not in a module of its own: the pacer calls it three or four times a call.
    """

    interval: float  # seconds a token takes to come back
    burst: int  # tokens when full
    full_at: float = 0.0  # loop time at which all ``burst`` tokens are back

    def wait(self, now: float, reserve: int = 0) -> float:
        """Seconds until a token is free, leaving ``reserve`` of them untouched."""
        room = max(0, self.burst - 1 - reserve) * self.interval
        return max(0.0, self.full_at - room - now)

    def take(self, now: float) -> float:
        """Take a token (free now: see ``wait``); what it was charged, for ``settle``."""
        self.full_at = max(self.full_at, now) + self.interval
        return self.full_at

    def settle(self, charged: float, late: float) -> None:
        """The call that took ``charged`` was answered ``late`` seconds after it went: its
        token comes back that much later (in a bucket with a burst).
        """
        if self.burst > 1:
            self.full_at = max(self.full_at, charged + late)

    def full(self, now: float) -> bool:
        return self.full_at <= now


def reserve_of(burst: int) -> int:
    """Tokens a bucket keeps for final replies: previews take only the rest, so a final never
    waits for a token a preview took (half the burst; none in a bucket of one).
    """
    return burst // 2


async def sleep_unless(seconds: float, stops: Collection[asyncio.Future[None]]) -> bool:
    """Sleep ``seconds``; False as soon as one of ``stops`` is done (then it is cut short)."""
    if not stops:
        await asyncio.sleep(seconds)
        return True
    if any(stop.done() for stop in stops):
        return False
    timer = asyncio.ensure_future(asyncio.sleep(seconds))
    try:
        await asyncio.wait({timer, *stops}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
    return not any(stop.done() for stop in stops)


@dataclass(frozen=True, slots=True)
class Rate:
    """At most ``count`` calls per ``period`` seconds, ``burst`` of them at once (1: evenly
    spaced); a count of 0 is no limit.
    """

    count: float
    period: float = 1.0
    burst: int = 1

    @property
    def interval(self) -> float:
        return self.period / self.count if self.count > 0 else 0.0

    def bucket(self) -> Bucket | None:
        return Bucket(self.interval, max(1, self.burst)) if self.count > 0 else None


class Budget(Protocol):
    """The global limit: ``take`` returns when one more call may go."""

    async def prepare(self) -> None: ...

    async def take(self, urgent: bool, stops: Collection[asyncio.Future[None]]) -> float | None:
        """Wait for a token (a preview leaves the reserve alone); what it was charged, for
        ``settle``, or None when one of ``stops`` came first (nothing taken).
        """
        ...

    def settle(self, charged: float, late: float) -> None: ...

    async def aclose(self) -> None: ...


class LocalBudget:
    """The global limit of one process."""

    def __init__(self, rate: Rate) -> None:
        self._bucket = rate.bucket()
        self._reserve = reserve_of(max(1, rate.burst))

    async def prepare(self) -> None:
        return None

    async def take(self, urgent: bool, stops: Collection[asyncio.Future[None]]) -> float | None:
        bucket = self._bucket
        if bucket is None:
            return 0.0
        loop = asyncio.get_running_loop()
        while True:
            wait = bucket.wait(loop.time(), 0 if urgent else self._reserve)
            if wait <= 0:
                return bucket.take(loop.time())
            if not await sleep_unless(wait, stops):
                return None

    def settle(self, charged: float, late: float) -> None:
        if self._bucket is not None:
            self._bucket.settle(charged, late)

    async def aclose(self) -> None:
        return None


@dataclass(slots=True)
class _Lane:
    bucket: Bucket | None
    rate: Rate
    reserve: int
    gate: Gate = field(default_factory=Gate)
    users: int = 0


@dataclass(slots=True)
class _Ticket:
    urgent: bool
    prepaid: str | None = None  # a lane whose slot the next call there has already taken


@dataclass(frozen=True, slots=True)
class _Charge:
    lane: float | None
    budget: float | None


_TICKET: ContextVar[_Ticket | None] = ContextVar("slashgate_pacing_ticket", default=None)


@contextmanager
def previewing() -> Iterator[None]:
    """Calls made inside (this task and the tasks it starts) are previews: not urgent."""
    token = _TICKET.set(_Ticket(urgent=False))
    try:
        yield
    finally:
        _TICKET.reset(token)


class _Paced:
    """``Pacer.call``'s context: a class, not a generator-based context manager, for it is
    around every platform call a reply makes (the generator, its manager and their entry and
    exit cost more than the pacing's own work when nobody waits).
    """

    __slots__ = ("_charge", "_key", "_pacer", "_prepaid", "_rate", "_urgent", "_went")

    def __init__(
        self, pacer: Pacer, key: str, rate: Rate, urgent: bool | None, prepaid: bool = True
    ) -> None:
        self._pacer, self._key, self._rate, self._urgent = pacer, key, rate, urgent
        self._prepaid = prepaid  # a slot's call to this lane is through already
        self._charge: _Charge | None = None
        self._went = 0.0

    async def __aenter__(self) -> None:
        ticket = _TICKET.get()
        if self._prepaid and ticket is not None and ticket.prepaid == self._key:
            ticket.prepaid = None
            return
        urgent = self._urgent
        if urgent is None:
            urgent = ticket is None or ticket.urgent
        self._charge = await self._pacer._admit(self._key, self._rate, urgent)
        self._went = asyncio.get_running_loop().time()

    async def __aexit__(self, *exc: object) -> None:
        if self._charge is not None:
            late = asyncio.get_running_loop().time() - self._went
            self._pacer._settle(self._key, self._charge, late)


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

    def call(self, key: str, rate: Rate, urgent: bool | None = None) -> _Paced:
        """``async with`` around one call to ``key``: wait for its turn, then its tokens
        count from when it was answered. Urgent unless said otherwise or made inside
        ``previewing`` or ``slot`` (whose slot the first such call uses).
        """
        return _Paced(self, key, rate, urgent)

    async def acquire(self, key: str, rate: Rate, urgent: bool = True) -> None:
        """Wait until a call to ``key`` may go (its tokens count from now)."""
        await self._admit(key, rate, urgent)

    @asynccontextmanager
    async def slot(self, key: str, rate: Rate) -> AsyncIterator[None]:
        """A preview's slot, taken before its text is made (so that it shows the latest):
        the first call to ``key`` inside uses it, later ones are previews too.
        """
        async with _Paced(self, key, rate, False, prepaid=False):
            token = _TICKET.set(_Ticket(urgent=False, prepaid=key))
            try:
                yield
            finally:
                _TICKET.reset(token)

    def _settle(self, key: str, charge: _Charge, late: float) -> None:
        """A call's tokens counted from when it was answered, ``late`` seconds after it went."""
        if charge.budget is not None:
            self.budget.settle(charge.budget, late)
        lane = self._busy.get(key) or self._idle.get(key)
        if charge.lane is not None and lane is not None and lane.bucket is not None:
            lane.bucket.settle(charge.lane, late)

    async def _admit(self, key: str, rate: Rate, urgent: bool) -> _Charge:
        """Wait for ``key``'s lane and its token, then for the global budget; a caller
        cancelled on the way takes no token from anyone. A preview that gives way to a final
        reply goes back in line, in its place among the previews.
        """
        lane = self._lane(key, rate)
        places: list[int | None] = [None, None]
        try:
            while True:
                try:
                    return await self._through(key, lane, urgent, places)
                except Preempted:
                    continue
        finally:
            self._release(key, lane)

    async def _through(
        self, key: str, lane: _Lane, urgent: bool, places: list[int | None]
    ) -> _Charge:
        loop = asyncio.get_running_loop()
        chat, bot = lane.gate, self._gate
        mine = await chat.enter(urgent, places[0])
        try:
            places[0] = mine.order
            stops = [mine.preempted] if mine.preempted is not None else []
            # Each ``_unpaused`` only when a pause is on: it is a coroutine, and most calls
            # find none (it would return at once).
            if key in self._pauses:
                await self._unpaused(key)
            bucket = lane.bucket
            reserve = 0 if urgent else lane.reserve
            while bucket is not None and (wait := bucket.wait(loop.time(), reserve)) > 0:
                if not await sleep_unless(wait, stops):
                    raise Preempted
            line = await bot.enter(urgent, places[1], mine.preempted)
            try:
                places[1] = line.order
                if line.preempted is not None:
                    stops.append(line.preempted)
                if self._paused_all > loop.time():
                    await self._unpaused(None)
                charged = await self.budget.take(urgent, stops)
                if charged is None:
                    raise Preempted
            finally:
                bot.leave()
            if key in self._pauses:  # a 429 came meanwhile
                await self._unpaused(key)
            # The chat's token is taken now, when the call goes (time only adds tokens: the
            # one seen free above still is).
            return _Charge(None if bucket is None else bucket.take(loop.time()), charged)
        finally:
            chat.leave()

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
            if lane is None or lane.rate != rate:
                lane = _Lane(rate.bucket(), rate, reserve_of(max(1, rate.burst)))
            self._busy[key] = lane
        lane.users += 1
        return lane

    def _release(self, key: str, lane: _Lane) -> None:
        lane.users -= 1
        if not lane.users:
            del self._busy[key]
            if lane.bucket is not None and not lane.bucket.full(asyncio.get_running_loop().time()):
                self._idle.set(key, lane)  # its tokens still count against the next call
