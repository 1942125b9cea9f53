"""The global limit shared by the replicas of one bot, through the Redis store.

A short script reserves the next slot (the next free time, one interval after the last slot
given to any replica, on Redis's clock) and answers how long to wait for it: one round trip
per call on the store's own connection (``RedisStore.run_script``), no polling, and the
replicas never send in the same slot. A caller cancelled while it waits leaves its slot
unused: the bot sends a little less, never more.

Where Redis fails or does not answer within ``REDIS_TIMEOUT``, the replica paces alone, at
its share of the limit (the limit over the replicas that reserved in the last minute), for
``ALONE_FOR`` before it asks Redis again; it says so in the log once per such episode.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from gateway.api import Store
from gateway.state import StoreUnavailable
from gateway.state.redis import Scripts, redis_of
from gateway.state.resp import sha1

from .pacer import LocalBudget, Rate

log = logging.getLogger("slashgate.pacing")
REDIS_TIMEOUT = 2.0  # seconds one reservation may take before this replica paces alone
# Seconds this replica paces alone after Redis failed or hung, before it asks again. One
# caller at a time holds the bot's line: asking a hanging Redis on every call would let one
# call out per REDIS_TIMEOUT, where this costs one such wait per 10 s; a restarted Redis is
# used again within 10 s.
ALONE_FOR = 10.0
SEEN_FOR_MS = 60_000  # a replica that reserved within this long counts in the shares

# KEYS[1]: the budget, KEYS[2]: the replicas that use it (sorted set, score = when last, ms);
# ARGV[1]: microseconds between two calls, ARGV[2]: this replica, ARGV[3]: SEEN_FOR_MS.
# Answers the microseconds to wait for the slot it reserved and how many replicas share the
# budget. %.0f: Lua 5.1 would print a time in microseconds as 1.7e+15.
_RESERVE = """
local now = redis.call('TIME')
local us = tonumber(now[1]) * 1000000 + tonumber(now[2])
local interval = tonumber(ARGV[1])
local slot = tonumber(redis.call('GET', KEYS[1]) or '0')
if slot < us then slot = us end
local ttl = math.floor((slot + interval - us) / 1000) + 1000
redis.call('SET', KEYS[1], string.format('%.0f', slot + interval), 'PX', ttl)
local ms = math.floor(us / 1000)
redis.call('ZADD', KEYS[2], string.format('%.0f', ms), ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%.0f', ms - tonumber(ARGV[3])))
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return {slot - us, redis.call('ZCARD', KEYS[2])}
"""
_SHA = sha1(_RESERVE)


class SharedBudget:
    def __init__(
        self,
        redis: Scripts,
        key: str,
        rate: Rate,
        timeout: float = REDIS_TIMEOUT,
        alone_for: float = ALONE_FOR,
    ) -> None:
        self._redis = redis
        self._keys = [key, f"{key}:replicas"]
        self._rate = rate
        self._interval_us = round(rate.interval * 1_000_000)
        self._replica = uuid.uuid4().hex
        self._timeout = timeout
        self._alone_for = alone_for
        self._replicas = 1  # sharing the budget, as Redis last told
        self._local = LocalBudget(rate)  # this replica's share, while Redis fails
        self._alone_until = 0.0  # loop time until which Redis is not asked
        self._failing = False

    @property
    def alone_until(self) -> float:
        """The event loop's time until which this replica paces alone (0: it has not)."""
        return self._alone_until

    async def prepare(self) -> None:
        """Connect and load the script (a reservation of no time), so that the first reply
        pays for neither.
        """
        try:
            await self._reserve(0)
        except (StoreUnavailable, TimeoutError) as exc:
            self._alone(exc)

    async def take(self) -> None:
        if self._interval_us <= 0:
            return
        if asyncio.get_running_loop().time() < self._alone_until:
            await self._local.take()
            return
        try:
            wait_us = await self._reserve(self._interval_us)
        except (StoreUnavailable, TimeoutError) as exc:
            self._alone(exc)
            await self._local.take()
            return
        if wait_us > 0:
            await asyncio.sleep(wait_us / 1_000_000)

    async def _reserve(self, interval_us: int) -> int:
        # The store's client keeps a caller's cancel (the command's reply is read and dropped
        # on its own), so no shield is needed: redis-py's, on Python 3.11, lost a cancel that
        # came just as its write completed, and a cancelled preview went on streaming
        # (tests/pacing cancels a caller after every turn of the loop in its reservation).
        args = [interval_us, self._replica, SEEN_FOR_MS]
        async with asyncio.timeout(self._timeout):
            wait_us, replicas = await self._redis.run_script(_RESERVE, _SHA, self._keys, args)
        if self._failing:
            log.warning("pacing: Redis answers again; the replicas share the limit through it")
            self._failing = False
        if replicas != self._replicas:
            self._replicas = max(1, int(replicas))
            share = Rate(self._rate.count / self._replicas, self._rate.period)
            self._local = LocalBudget(share)
        return int(wait_us)

    def _alone(self, exc: BaseException) -> None:
        self._alone_until = asyncio.get_running_loop().time() + self._alone_for
        if not self._failing:
            log.warning(
                "pacing: Redis failed (%r); this replica paces alone at 1/%d of the limit, "
                "asking Redis again every %g s",
                exc,
                self._replicas,
                self._alone_for,
            )
        self._failing = True

    async def aclose(self) -> None:
        return None  # the store's connection is the store's to close


def budget(store: Store, key: str, rate: Rate) -> LocalBudget | SharedBudget:
    """The global limit: shared through the store where it is Redis (replicas), else this
    process's.
    """
    redis = redis_of(store)
    return SharedBudget(redis, key, rate) if redis is not None else LocalBudget(rate)
