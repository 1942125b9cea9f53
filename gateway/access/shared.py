"""The per-sender token buckets shared by the replicas of one Redis store: a short script
refills and takes in one round trip on the store's own connection, on Redis's clock.
"""

from __future__ import annotations

import asyncio

from ..state import StateStore
from ..state.redis import Scripts, redis_of
from ..state.resp import sha1
from .limits import Buckets

TIMEOUT = 1.0  # seconds a take may wait for Redis before this replica counts alone

# KEYS[1]: the sender's bucket. ARGV: tokens a millisecond, the burst, the key's life (ms).
# Answers {1} when a token was taken, else {0, the tokens left as text}.
_TAKE = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + tonumber(now[2]) / 1000
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local held = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(held[1]) or burst
local at = tonumber(held[2]) or ms
tokens = math.min(burst, tokens + math.max(0, ms - at) * rate)
local taken = 0
if tokens >= 1 then
  tokens = tokens - 1
  taken = 1
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.6f', tokens),
  'at', string.format('%.3f', ms))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {taken, string.format('%.6f', tokens)}
"""
_SHA = sha1(_TAKE)


class SharedBuckets:
    def __init__(self, redis: Scripts, prefix: str, per_minute: float, burst: int) -> None:
        self._redis = redis
        self._prefix = f"{prefix}access:bucket:"
        self._rate_ms = per_minute / 60_000
        self._burst = burst
        # A full bucket's key lives as long as an empty one takes to fill, plus a minute.
        self._life_ms = round(burst / self._rate_ms) + 60_000 if self._rate_ms > 0 else 60_000

    async def take(self, sender: str) -> float | None:
        args = [repr(self._rate_ms), self._burst, self._life_ms]
        async with asyncio.timeout(TIMEOUT):
            taken, left = await self._redis.run_script(_TAKE, _SHA, [self._prefix + sender], args)
        return None if int(taken) else float(left)


def shared_buckets(store: StateStore, prefix: str, per_minute: float, burst: int) -> Buckets | None:
    """The replicas' shared buckets where the store is Redis; else None (each process's own)."""
    redis = redis_of(store)
    if redis is None or per_minute <= 0:
        return None
    return SharedBuckets(redis, prefix, per_minute, burst)
