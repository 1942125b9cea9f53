"""The global limit shared by the replicas of one bot, through the Redis store.

A short script keeps the bucket on Redis's clock (``bucket``: the time it is full again) and
reserves the next token: a final reply's may be a little ahead, and the script answers how
long to wait for it; a preview's only one free now, beside the reserve kept for finals (else
it answers how long until one is, and the preview asks again then, or gives way to a final
meanwhile). One round trip per call on the store's own connection
(``RedisStore.run_script``), no polling, and the replicas never send in the same slot. A
caller cancelled while it waits leaves its token unused: the bot sends a little less, never
more. Each reservation carries a token of its own: sent again after a dropped connection
(gateway/state/resp.py), it is answered as the first time, not reserved twice.

Where Redis fails or does not answer within ``REDIS_TIMEOUT``, the replica paces alone, at
its share of the limit (the limit over the replicas that reserved in the last minute), for
``ALONE_FOR`` before it asks Redis again; it says so in the log once per such episode.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import uuid
from collections.abc import Collection

from gateway.api import Store
from gateway.state import StoreUnavailable
from gateway.state.redis import Scripts, redis_of
from gateway.state.resp import sha1

from .pacer import LocalBudget, Rate, reserve_of, sleep_unless

log = logging.getLogger("slashgate.pacing")
REDIS_TIMEOUT = 2.0  # seconds one reservation may take before this replica paces alone
# Seconds this replica paces alone after Redis failed or hung, before it asks again. One
# caller at a time holds the bot's line: asking a hanging Redis on every call would let one
# call out per REDIS_TIMEOUT, where this costs one such wait per 10 s; a restarted Redis is
# used again within 10 s.
ALONE_FOR = 10.0
SEEN_FOR_MS = 60_000  # a replica that reserved within this long counts in the shares

# KEYS[1]: the bucket (when it is full again, us), KEYS[2]: the replicas that use it (sorted
# set, score = when last, ms), KEYS[3]: each replica's last reservation ("token:due").
# ARGV[1]: microseconds a token takes to come back, ARGV[2]: this replica, ARGV[3]:
# SEEN_FOR_MS, ARGV[4]: the burst, ARGV[5]: tokens to leave alone (0: may reserve ahead),
# ARGV[6]: this reservation's token. Answers the microseconds to wait, whether a token was
# reserved, and how many replicas share the budget. %.0f: Lua 5.1 would print a time in
# microseconds as 1.7e+15.
_RESERVE = """
local now = redis.call('TIME')
local us = tonumber(now[1]) * 1000000 + tonumber(now[2])
local replicas = redis.call('ZCARD', KEYS[2])
local last = redis.call('HGET', KEYS[3], ARGV[2])
if last then
  local at = string.find(last, ':', 1, true)
  if string.sub(last, 1, at - 1) == ARGV[6] then
    local due = tonumber(string.sub(last, at + 1))
    return {math.max(0, due - us), 1, math.max(1, replicas)}
  end
end
local interval = tonumber(ARGV[1])
local full = tonumber(redis.call('GET', KEYS[1]) or '0')
if full < us then full = us end
local reserve = tonumber(ARGV[5])
local due = full - math.max(0, tonumber(ARGV[4]) - 1 - reserve) * interval
if due < us then due = us end
if reserve > 0 and due > us then return {due - us, 0, math.max(1, replicas)} end
local ttl = math.floor((full + interval - us) / 1000) + 1000
redis.call('SET', KEYS[1], string.format('%.0f', full + interval), 'PX', ttl)
redis.call('HSET', KEYS[3], ARGV[2], ARGV[6] .. ':' .. string.format('%.0f', due))
redis.call('PEXPIRE', KEYS[3], ARGV[3])
local ms = math.floor(us / 1000)
redis.call('ZADD', KEYS[2], string.format('%.0f', ms), ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%.0f', ms - tonumber(ARGV[3])))
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return {due - us, 1, redis.call('ZCARD', KEYS[2])}
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
        self._keys = [key, f"{key}:replicas", f"{key}:last"]
        self._rate = rate
        self._interval_us = round(rate.interval * 1_000_000)
        self._burst = max(1, rate.burst)
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
            await self._reserve(0, 0)
        except (StoreUnavailable, TimeoutError) as exc:
            self._alone(exc)

    async def take(self, urgent: bool, stops: Collection[asyncio.Future[None]]) -> float | None:
        if self._interval_us <= 0:
            return 0.0
        reserve = 0 if urgent else reserve_of(self._burst)
        while True:
            if asyncio.get_running_loop().time() < self._alone_until:
                return await self._local.take(urgent, stops)
            try:
                wait_us, reserved = await self._reserve(self._interval_us, reserve)
            except (StoreUnavailable, TimeoutError) as exc:
                self._alone(exc)
                return await self._local.take(urgent, stops)
            if reserved:
                if wait_us > 0:  # a final reply's token, a little ahead
                    await asyncio.sleep(wait_us / 1_000_000)
                return 0.0
            if not await sleep_unless(wait_us / 1_000_000, stops):
                return None  # a preview gives way

    def settle(self, charged: float, late: float) -> None:
        """Redis's bucket counts a call from its reservation (a round trip per call is all
        it costs); the platforms' strict bot-wide limits leave room for that.
        """

    async def _reserve(self, interval_us: int, reserve: int) -> tuple[int, bool]:
        # The store's client keeps a caller's cancel (the command's reply is read and dropped
        # on its own), so no shield is needed: redis-py's, on Python 3.11, lost a cancel that
        # came just as its write completed, and a cancelled preview went on streaming
        # (tests/pacing cancels a caller after every turn of the loop in its reservation).
        token = secrets.token_hex(8)
        args = [interval_us, self._replica, SEEN_FOR_MS, self._burst, reserve, token]
        async with asyncio.timeout(self._timeout):
            answer = await self._redis.run_script(_RESERVE, _SHA, self._keys, args)
        wait_us, reserved, replicas = answer
        if self._failing:
            log.warning("pacing: Redis answers again; the replicas share the limit through it")
            self._failing = False
        if replicas != self._replicas:
            self._replicas = max(1, int(replicas))
            rate = self._rate
            share = Rate(rate.count / self._replicas, rate.period, rate.burst)
            self._local = LocalBudget(share)
        return int(wait_us), bool(reserved)

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
