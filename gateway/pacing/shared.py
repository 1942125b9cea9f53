"""The global limit shared by the replicas of one bot, through Redis.

A short script reserves the next slot (the next free time, one interval after the last slot
given to any replica, on Redis's clock) and answers how long to wait for it: one round trip
per call, no polling, and the replicas never send in the same slot. A caller cancelled while
it waits leaves its slot unused: the bot sends a little less, never more. Were Redis out of
reach, the replica keeps the limit on its own for that call (and says so in the log).
"""

from __future__ import annotations

import asyncio
import logging

from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from .pacer import LocalBudget, Rate

log = logging.getLogger("slashgate.pacing")
REDIS_TIMEOUT = 2.0  # seconds one reservation may take before this replica paces alone

# KEYS[1]: the budget; ARGV[1]: microseconds between two calls. Answers the microseconds to
# wait for the slot it reserved. %.0f: Lua 5.1 would print a time in microseconds as 1.7e+15.
_RESERVE = """
local now = redis.call('TIME')
local us = tonumber(now[1]) * 1000000 + tonumber(now[2])
local interval = tonumber(ARGV[1])
local slot = tonumber(redis.call('GET', KEYS[1]) or '0')
if slot < us then slot = us end
local ttl = math.floor((slot + interval - us) / 1000) + 1000
redis.call('SET', KEYS[1], string.format('%.0f', slot + interval), 'PX', ttl)
return slot - us
"""


class SharedBudget:
    def __init__(self, url: str, key: str, rate: Rate) -> None:
        self._url = url
        self._redis: Redis | None = None  # made on the loop that uses it, at the first call
        self._reserve: AsyncScript | None = None
        self._key = key
        self._interval_us = round(rate.interval * 1_000_000)
        self._local = LocalBudget(rate)  # while Redis is out of reach
        self._failing = False

    def _connect(self) -> Redis:
        if self._redis is None:
            self._redis = Redis.from_url(self._url)
            self._reserve = self._redis.register_script(_RESERVE)
        return self._redis

    def _script(self) -> AsyncScript:
        self._connect()
        assert self._reserve is not None  # made with the client
        return self._reserve

    async def prepare(self) -> None:
        """Connect and load the script, so that the first reply pays for neither."""
        try:
            await self._connect().script_load(_RESERVE)
        except RedisError as exc:
            log.warning("pacing: Redis is out of reach for now (%s)", exc)

    async def take(self) -> None:
        if self._interval_us <= 0:
            return
        try:
            # Shielded: on Python 3.11, redis-py's write (asyncio.wait_for) loses a cancel
            # that comes just as it completes, and a cancelled preview went on streaming while
            # its final reply waited for it to end (tests/pacing); the caller's cancel lands on
            # the shield instead, and the slot reserved for it goes unused. Bounded: a Redis
            # that hangs holds no reply for long.
            async with asyncio.timeout(REDIS_TIMEOUT):
                wait_us = await asyncio.shield(self._reserve_slot())
        except (RedisError, TimeoutError) as exc:
            if not self._failing:
                log.warning("pacing without Redis (%r): this replica keeps the limit alone", exc)
            self._failing = True
            await self._local.take()
            return
        self._failing = False
        if wait_us > 0:
            await asyncio.sleep(wait_us / 1_000_000)

    async def _reserve_slot(self) -> int:
        return int(await self._script()(keys=[self._key], args=[self._interval_us]))

    async def aclose(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()


def budget(url: str | None, key: str, rate: Rate) -> LocalBudget | SharedBudget:
    """The global limit: shared through the Redis at ``url`` (replicas), else this process's."""
    return LocalBudget(rate) if url is None else SharedBudget(url, key, rate)
