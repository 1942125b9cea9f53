"""A token bucket: ``burst`` calls at once, then one an interval (GCRA: one number, the time at
which the bucket is full again). In a bucket with a burst, a call counts from when it was
answered, the latest moment the platform can have counted it (``settle``): the gateway's
figures then never run ahead of the platform's at the edge of a burst, whatever the jitter of
the network and of the event loop. A bucket of one (an even spacing: Telegram's 30 a second for
the whole bot) counts from when the call went: counting from the answer there would add the
round trip to every interval (a third of the rate at 30 a second and 60 ms to Telegram), and
the platform's own tolerance ("or so") covers the jitter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass


@dataclass(slots=True)
class Bucket:
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
