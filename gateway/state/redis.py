"""Redis: the store several gateway replicas share. Commands go through gateway/state/resp.py
(one connection, pipelined), subscriptions through redis-py's asyncio client.

Every step that reads and then writes is one Lua script (sent by its SHA1: EVALSHA), so
replicas never interleave inside it, and each step of a journal entry is one round trip.
Keys live under one prefix:
- ``kv:<key>``: key-value entries;
- ``claims`` (sorted set, score = expiry) and ``claimv`` (hash): claims, bounded by count;
- ``j`` (hash id -> entry as appended), ``js`` (hash id -> its status since: state, reply,
  owner, command; the entry is not written again), ``jseq`` (sorted set id by seq) and
  ``jc:<conversation>``: the journal, and each conversation's part of it in order;
  ``jseqn`` counts arrivals;
- ``lease:<name>`` (``<token>|<owner>``, expiring) and ``leasen``, the fencing counter;
- ``topic:<topic>``: the pub/sub channels replicas talk on.
Redis keeps nothing across its own restart unless it persists (AOF): see docs/reliability.md.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import hiredis
from redis import asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisError

from .base import Entry, Lease, StateStore, StoreUnavailable, decode, encode
from .resp import Resp, sha1

T = TypeVar("T")

# KEYS[1], KEYS[2]: claims, claimv. The held value, or false once claimed now.
_CLAIM_FN = """
local function claim(key, value, now, ttl, max)
  local expiry = redis.call('ZSCORE', KEYS[1], key)
  if expiry and tonumber(expiry) > now then return redis.call('HGET', KEYS[2], key) end
  redis.call('ZADD', KEYS[1], now + ttl, key)
  redis.call('HSET', KEYS[2], key, value)
  local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 64)
  local extra = redis.call('ZCARD', KEYS[1]) - #old - max
  if extra > 0 then
    for _, k in ipairs(redis.call('ZRANGE', KEYS[1], #old, #old + extra - 1)) do
      table.insert(old, k)
    end
  end
  for _, k in ipairs(old) do
    redis.call('ZREM', KEYS[1], k)
    redis.call('HDEL', KEYS[2], k)
  end
  return false
end
"""

# ARGV: key, value, now, ttl, max claims
_CLAIM = (
    _CLAIM_FN
    + "return claim(ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]))"
)

# KEYS: claims, claimv. ARGV: key, now. The value held, or false.
_RECALL = """
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not expiry or tonumber(expiry) <= tonumber(ARGV[2]) then return false end
return redis.call('HGET', KEYS[2], ARGV[1])
"""

_FORGET = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
"""

_PUT_CLAIM = """
redis.call('ZADD', KEYS[1], tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
"""

# KEYS: claims, claimv, j, jseq, jseqn, jc:<conversation>
# ARGV: claim key ('' for none), now, ttl, max claims, id, entry, claim value
_APPEND = (
    _CLAIM_FN
    + """
if ARGV[1] ~= '' and claim(ARGV[1], ARGV[7], tonumber(ARGV[2]), tonumber(ARGV[3]),
                           tonumber(ARGV[4])) then
  return false
end
local seq = redis.call('INCR', KEYS[5])
redis.call('HSET', KEYS[3], ARGV[5], ARGV[6])
redis.call('ZADD', KEYS[4], seq, ARGV[5])
redis.call('ZADD', KEYS[6], seq, ARGV[5])
return seq
"""
)

# KEYS: j, js, the fencing lease (or any key). ARGV: id, status, the lease's value ('': none)
_UPDATE = """
if ARGV[3] ~= '' and redis.call('GET', KEYS[3]) ~= ARGV[3] then return 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
return 1
"""

# KEYS: j, js, jseq, jc:<conversation>. ARGV: id
_FINISH = """
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return 1
"""

# KEYS: lease:<name>, j, js, jseq, jc:<conversation>. ARGV: the lease's value, id
_RELEASE_FINISHED = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
redis.call('HDEL', KEYS[2], ARGV[2])
redis.call('HDEL', KEYS[3], ARGV[2])
redis.call('ZREM', KEYS[4], ARGV[2])
redis.call('ZREM', KEYS[5], ARGV[2])
return 1
"""

# KEYS: jseq or jc:<conversation>, j, js. Seq, entry and status ('' for none) of each entry.
_PENDING = """
local ranked = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local found = {}
for i = 1, #ranked, 2 do
  local entry = redis.call('HGET', KEYS[2], ranked[i])
  if entry then
    table.insert(found, ranked[i + 1])
    table.insert(found, entry)
    table.insert(found, redis.call('HGET', KEYS[3], ranked[i]) or '')
  end
end
return found
"""

# KEYS[1], KEYS[2]: lease:<name>, leasen. The fencing token, or false while another holds it.
_ACQUIRE_FN = """
local function acquire(owner, ttl)
  local held = redis.call('GET', KEYS[1])
  if held then
    local token, holder = string.match(held, '^(%d+)|(.*)$')
    if holder ~= owner then return false end
    redis.call('PEXPIRE', KEYS[1], ttl)
    return tonumber(token)
  end
  local token = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], token .. '|' .. owner, 'PX', ttl)
  return token
end
"""

_ACQUIRE = _ACQUIRE_FN + "return acquire(ARGV[1], ARGV[2])"

# KEYS: lease:<name>, leasen, jc:<conversation>, j, js. ARGV: owner, ttl ms, seq ('': any
# order), the running entry's id ('': none) and its status
_TURN = (
    _ACQUIRE_FN
    + """
if ARGV[3] ~= '' then
  local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  if first[2] and tonumber(first[2]) < tonumber(ARGV[3]) then return false end
end
local token = acquire(ARGV[1], ARGV[2])
if token and ARGV[4] ~= '' and redis.call('HEXISTS', KEYS[4], ARGV[4]) == 1 then
  redis.call('HSET', KEYS[5], ARGV[4], ARGV[5])
end
return token
"""
)

_RENEW = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"""


class RedisStore(StateStore):
    shared = True
    kind = "redis"

    def __init__(self, url: str, prefix: str = "slashgate:", max_claims: int = 100_000) -> None:
        self.url = url
        self.prefix = prefix
        self.max_claims = max_claims
        self._resp: Resp | None = None  # the commands
        self._redis: aioredis.Redis | None = None  # the subscriptions (redis-py's pub/sub)

    def _k(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    async def open(self) -> None:
        if self._resp is None:
            self._resp = Resp(self.url, timeout=5.0, connect_timeout=2.0)
            self._redis = aioredis.Redis.from_url(
                self.url,
                socket_connect_timeout=2,
                # A dropped connection or a restarted server: tried again a few times, briefly
                # (the asyncio client's own Retry: given redis.retry's, it never retries).
                retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 3),
                retry_on_error=[ConnectionError, TimeoutError],
                health_check_interval=30,
            )

    async def close(self) -> None:
        resp, self._resp = self._resp, None
        redis, self._redis = self._redis, None
        if resp is not None:
            resp.close()
        if redis is not None:
            await redis.aclose()

    @property
    def resp(self) -> Resp:
        if self._resp is None:
            raise StoreUnavailable("the Redis store is not open")
        return self._resp

    @property
    def redis(self) -> aioredis.Redis:
        if self._redis is None:
            raise StoreUnavailable("the Redis store is not open")
        return self._redis

    async def _do(self, *command: Any) -> Any:
        try:
            return await self.resp.call(*command)
        except hiredis.ReplyError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc

    async def _eval(self, script: str, keys: list[str], args: list[Any]) -> Any:
        # By its SHA1 (EVALSHA), sent whole when the server does not know it (restarted).
        try:
            return await self.resp.script(script, _SHAS[script], keys, args)
        except hiredis.ReplyError as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc

    async def ping(self) -> None:
        await self._do("PING")

    # -- key-value -------------------------------------------------------------------------

    async def get(self, key: str) -> Any | None:
        raw = await self._do("GET", self._k("kv", key))
        return None if raw is None else json.loads(raw)

    async def set(self, key: str, value: Any) -> None:
        await self._do("SET", self._k("kv", key), encode(value))

    async def delete(self, key: str) -> bool:
        return bool(await self._do("DEL", self._k("kv", key)))

    # -- claims ----------------------------------------------------------------------------

    def _claim_keys(self) -> list[str]:
        return [self._k("claims"), self._k("claimv")]

    async def claim(self, key: str, value: Any, ttl: float) -> tuple[bool, Any | None]:
        held = await self._eval(
            _CLAIM, self._claim_keys(), [key, encode(value), time.time(), ttl, self.max_claims]
        )
        return (True, None) if held is None else (False, json.loads(held))

    async def recall(self, key: str) -> Any | None:
        raw = await self._eval(_RECALL, self._claim_keys(), [key, time.time()])
        return None if raw is None else await decode(raw)

    async def remember(self, key: str, value: Any, ttl: float) -> None:
        await self._eval(_PUT_CLAIM, self._claim_keys(), [key, encode(value), time.time(), ttl])

    async def forget(self, key: str) -> None:
        await self._eval(_FORGET, self._claim_keys(), [key])

    # -- the journal -----------------------------------------------------------------------

    async def append(
        self, entry: Entry, claim: str | None, ttl: float, value: Any = 1
    ) -> Entry | None:
        keys = [
            *self._claim_keys(),
            self._k("j"),
            self._k("jseq"),
            self._k("jseqn"),
            self._k("jc", entry.conversation),
        ]
        encoded = await entry.encoded()
        args = [claim or "", time.time(), ttl, self.max_claims, entry.id, encoded, encode(value)]
        seq = await self._eval(_APPEND, keys, args)
        if seq is None:
            return None
        entry.seq = int(seq)  # as written: not decoded back from what was just encoded
        return entry

    async def update(self, entry: Entry, fence: Lease | None = None) -> bool:
        lease_key = self._k("lease", fence.name) if fence else self._k("j")
        held = f"{fence.token}|{fence.owner}" if fence else ""
        keys = [self._k("j"), self._k("js"), lease_key]
        done = await self._eval(_UPDATE, keys, [entry.id, await entry.encoded_status(), held])
        return bool(done)

    async def finish(self, entry: Entry) -> None:
        keys = [self._k("j"), self._k("js"), self._k("jseq"), self._k("jc", entry.conversation)]
        await self._eval(_FINISH, keys, [entry.id])

    async def pending(self, conversation: str | None = None) -> list[Entry]:
        index = self._k("jseq") if conversation is None else self._k("jc", conversation)
        found = await self._eval(_PENDING, [index, self._k("j"), self._k("js")], [])
        entries = []
        for n in range(0, len(found), 3):  # oldest first
            seq, record, status = found[n : n + 3]
            entry = Entry.decode(record, status or None)
            entry.seq = int(seq)
            entries.append(entry)
        return entries

    # -- leases ----------------------------------------------------------------------------

    async def acquire(self, name: str, owner: str, ttl: float) -> Lease | None:
        token = await self._eval(
            _ACQUIRE, [self._k("lease", name), self._k("leasen")], [owner, int(ttl * 1000)]
        )
        return None if token is None else Lease(name, owner, int(token))

    async def take_turn(
        self,
        name: str,
        owner: str,
        ttl: float,
        conversation: str,
        seq: int | None,
        running: Entry | None = None,
    ) -> Lease | None:
        keys = [
            self._k("lease", name), self._k("leasen"), self._k("jc", conversation),
            self._k("j"), self._k("js"),
        ]  # fmt: skip
        marked = ("", "") if running is None else (running.id, await running.encoded_status())
        args = [owner, int(ttl * 1000), "" if seq is None else seq, *marked]
        token = await self._eval(_TURN, keys, args)
        return None if token is None else Lease(name, owner, int(token))

    async def renew(self, lease: Lease, ttl: float) -> bool:
        held = f"{lease.token}|{lease.owner}"
        done = await self._eval(_RENEW, [self._k("lease", lease.name)], [held, int(ttl * 1000)])
        return bool(done)

    async def release(self, lease: Lease) -> None:
        await self._eval(_RELEASE, [self._k("lease", lease.name)], [f"{lease.token}|{lease.owner}"])

    async def release_finished(self, lease: Lease, entry: Entry) -> None:
        keys = [
            self._k("lease", lease.name), self._k("j"), self._k("js"), self._k("jseq"),
            self._k("jc", entry.conversation),
        ]  # fmt: skip
        await self._eval(_RELEASE_FINISHED, keys, [f"{lease.token}|{lease.owner}", entry.id])

    async def holder(self, name: str) -> str | None:
        held = await self._do("GET", self._k("lease", name))
        return None if held is None else held.decode().partition("|")[2]

    # -- messages between replicas --------------------------------------------------------

    async def publish(self, topic: str, message: str) -> None:
        await self._do("PUBLISH", self._k("topic", topic), message)

    async def listen(self, topic: str) -> AsyncIterator[str]:
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        reading: asyncio.Future[Any] | None = None
        try:
            await _shielded(asyncio.ensure_future(pubsub.subscribe(self._k("topic", topic))))
            while True:
                # A second at most, so that a cancelled listener's read ends soon after it.
                reading = asyncio.ensure_future(pubsub.get_message(True, timeout=1.0))
                message = await _shielded(reading)
                if message is not None:
                    yield message["data"].decode()
        finally:
            if reading is not None and not reading.done():
                await asyncio.wait({reading})
            await pubsub.aclose()


async def _shielded(step: asyncio.Future[T]) -> T:
    # redis-py can swallow a cancel that lands mid-command (redis/redis-py#2028; seen here
    # with 7.4 and 8.1), leaving the caller's loop running: the subscription's step runs to
    # its end in a task of its own, and a cancel reaches the caller at once.
    try:
        return await asyncio.shield(step)
    except (RedisError, OSError) as exc:
        raise StoreUnavailable(f"Redis: {exc}") from exc


_SHAS = {
    script: sha1(script)
    for script in (
        _CLAIM, _PUT_CLAIM, _RECALL, _FORGET, _APPEND, _UPDATE, _FINISH, _PENDING, _ACQUIRE,
        _TURN, _RENEW, _RELEASE, _RELEASE_FINISHED,
    )
}  # fmt: skip
