"""Redis (redis-py's asyncio client): the store several gateway replicas share.

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
import inspect
import json
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

from redis import asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from .base import Entry, Lease, StateStore, StoreUnavailable, decode, encode

T = TypeVar("T")

_COMMANDS = 100  # at most at once in this process; the others wait for a slot
_CONNECTIONS = _COMMANDS + 16  # the pool's bound: the commands' and the subscriptions'

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

_ACQUIRE = """
local held = redis.call('GET', KEYS[1])
if held then
  local token, owner = string.match(held, '^(%d+)|(.*)$')
  if owner ~= ARGV[1] then return false end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return tonumber(token)
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token .. '|' .. ARGV[1], 'PX', ARGV[2])
return token
"""

# KEYS: lease:<name>, leasen, jc:<conversation>. ARGV: owner, ttl ms, seq ('': any order)
_TURN = (
    """
if ARGV[3] ~= '' then
  local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  if first[2] and tonumber(first[2]) < tonumber(ARGV[3]) then return false end
end
"""
    + _ACQUIRE
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
        self._redis: aioredis.Redis | None = None
        self._scripts: dict[str, AsyncScript] = {}  # by source, for the client open now
        self._slots = asyncio.Semaphore(_COMMANDS)

    def _k(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    async def open(self) -> None:
        if self._redis is None:
            self._slots = asyncio.Semaphore(_COMMANDS)  # of this loop
            self._redis = aioredis.Redis.from_url(
                self.url,
                max_connections=_CONNECTIONS,
                socket_timeout=5,
                socket_connect_timeout=2,
                # A dropped connection or a restarted server: tried again a few times, briefly
                # (the asyncio client's own Retry: given redis.retry's, it never retries).
                retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 3),
                retry_on_error=[ConnectionError, TimeoutError],
                health_check_interval=30,
            )

    async def close(self) -> None:
        redis, self._redis = self._redis, None
        self._scripts.clear()
        if redis is not None:
            await redis.aclose()

    @property
    def redis(self) -> aioredis.Redis:
        if self._redis is None:
            raise StoreUnavailable("the Redis store is not open")
        return self._redis

    async def _run(self, step: Awaitable[T]) -> T:
        # redis-py can swallow a cancel that lands mid-command (redis/redis-py#2028; seen
        # here with 7.4 and 8.1), leaving the caller's loop running: the command runs to its
        # end in a task of its own, and a cancel reaches the caller at once. It holds one of
        # ``_COMMANDS`` slots until its end: a burst of turns (their inputs acknowledged at
        # once, a few commands each) waits for them, where redis-py's pool would refuse a
        # command beyond its bound ("Too many connections": a 503 to the platform).
        slots = self._slots
        try:
            await slots.acquire()
        except BaseException:
            if inspect.iscoroutine(step):
                step.close()  # never sent
            raise
        command = asyncio.ensure_future(step)
        command.add_done_callback(lambda _: slots.release())
        try:
            return await asyncio.shield(command)
        except (RedisError, OSError) as exc:
            raise StoreUnavailable(f"Redis: {exc}") from exc

    async def _eval(self, script: str, keys: list[str], args: list[Any]) -> Any:
        # By its SHA1 (EVALSHA), loaded again when the server does not know it (restarted).
        registered = self._scripts.get(script)
        if registered is None:
            registered = self._scripts[script] = self.redis.register_script(script)
        return await self._run(registered(keys, args))

    async def _do(self, name: str, *args: Any) -> Any:
        return await self._run(getattr(self.redis, name)(*args))  # types mix sync and async

    async def _transaction(self, *commands: tuple[Any, ...]) -> None:
        async def run() -> None:
            async with self.redis.pipeline(transaction=True) as pipe:
                for name, *args in commands:
                    getattr(pipe, name)(*args)
                await pipe.execute()

        await self._run(run())

    async def ping(self) -> None:
        await self._do("ping")

    # -- key-value -------------------------------------------------------------------------

    async def get(self, key: str) -> Any | None:
        raw = await self._do("get", self._k("kv", key))
        return None if raw is None else json.loads(raw)

    async def set(self, key: str, value: Any) -> None:
        await self._do("set", self._k("kv", key), encode(value))

    async def delete(self, key: str) -> bool:
        return bool(await self._do("delete", self._k("kv", key)))

    # -- claims ----------------------------------------------------------------------------

    def _claim_keys(self) -> list[str]:
        return [self._k("claims"), self._k("claimv")]

    async def claim(self, key: str, value: Any, ttl: float) -> tuple[bool, Any | None]:
        held = await self._eval(
            _CLAIM, self._claim_keys(), [key, encode(value), time.time(), ttl, self.max_claims]
        )
        return (True, None) if held is None else (False, json.loads(held))

    async def recall(self, key: str) -> Any | None:
        expiry = await self._do("zscore", self._k("claims"), key)
        if expiry is None or expiry <= time.time():
            return None
        raw = await self._do("hget", self._k("claimv"), key)
        return None if raw is None else await decode(raw)

    async def remember(self, key: str, value: Any, ttl: float) -> None:
        await self._eval(_PUT_CLAIM, self._claim_keys(), [key, encode(value), time.time(), ttl])

    async def forget(self, key: str) -> None:
        await self._transaction(("zrem", self._k("claims"), key), ("hdel", self._k("claimv"), key))

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
        added = await Entry.decoded(encoded)
        added.seq = int(seq)
        return added

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
        self, name: str, owner: str, ttl: float, conversation: str, seq: int | None
    ) -> Lease | None:
        keys = [self._k("lease", name), self._k("leasen"), self._k("jc", conversation)]
        args = [owner, int(ttl * 1000), "" if seq is None else seq]
        token = await self._eval(_TURN, keys, args)
        return None if token is None else Lease(name, owner, int(token))

    async def renew(self, lease: Lease, ttl: float) -> bool:
        held = f"{lease.token}|{lease.owner}"
        done = await self._eval(_RENEW, [self._k("lease", lease.name)], [held, int(ttl * 1000)])
        return bool(done)

    async def release(self, lease: Lease) -> None:
        await self._eval(_RELEASE, [self._k("lease", lease.name)], [f"{lease.token}|{lease.owner}"])

    async def holder(self, name: str) -> str | None:
        held = await self._do("get", self._k("lease", name))
        return None if held is None else held.decode().partition("|")[2]

    # -- messages between replicas --------------------------------------------------------

    async def publish(self, topic: str, message: str) -> None:
        await self._do("publish", self._k("topic", topic), message)

    async def listen(self, topic: str) -> AsyncIterator[str]:
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        reading: asyncio.Future[Any] | None = None
        try:
            await self._run(pubsub.subscribe(self._k("topic", topic)))
            while True:
                # Shielded like every command (see _run); a second at most, so that a
                # cancelled listener's read ends soon after it.
                reading = asyncio.ensure_future(pubsub.get_message(True, timeout=1.0))
                message = await self._run(reading)
                if message is not None:
                    yield message["data"].decode()
        finally:
            if reading is not None and not reading.done():
                await asyncio.wait({reading})
            await pubsub.aclose()
