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
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol, TypeVar

import hiredis
from redis import asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisError

from . import redis_scripts as scripts
from .base import Entry, Lease, StateStore, StoreUnavailable, decode, encode
from .resp import Resp
from .timed import TimedStore

T = TypeVar("T")


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
        return await self.run_script(script, scripts.SHAS[script], keys, args)

    async def run_script(self, source: str, sha: str, keys: list[str], args: list[Any]) -> Any:
        """Another module's Lua script (the pacing's shared budget) on the store's connection:
        by its SHA1, sent whole where Redis does not know it; ``StoreUnavailable`` on failure.
        """
        try:
            return await self.resp.script(source, sha, keys, args)
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
            scripts.CLAIM,
            self._claim_keys(),
            # A token of this claim's own: sent again (resp.py), it knows the claim for its own.
            [key, encode(value), time.time(), ttl, self.max_claims, secrets.token_hex(8)],
        )
        return (True, None) if held is None else (False, json.loads(held))

    async def recall(self, key: str) -> Any | None:
        raw = await self._eval(scripts.RECALL, self._claim_keys(), [key, time.time()])
        return None if raw is None else await decode(raw)

    async def remember(self, key: str, value: Any, ttl: float) -> None:
        await self._eval(
            scripts.PUT_CLAIM, self._claim_keys(), [key, encode(value), time.time(), ttl]
        )

    async def forget(self, key: str) -> None:
        await self._eval(scripts.FORGET, self._claim_keys(), [key])

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
        seq = await self._eval(scripts.APPEND, keys, args)
        if seq is None:
            return None
        entry.seq = int(seq)  # as written: not decoded back from what was just encoded
        return entry

    async def update(self, entry: Entry, fence: Lease | None = None) -> bool:
        lease_key = self._k("lease", fence.name) if fence else self._k("j")
        held = f"{fence.token}|{fence.owner}" if fence else ""
        keys = [self._k("j"), self._k("js"), lease_key]
        done = await self._eval(
            scripts.UPDATE, keys, [entry.id, await entry.encoded_status(), held]
        )
        return bool(done)

    async def finish(self, entry: Entry) -> None:
        keys = [self._k("j"), self._k("js"), self._k("jseq"), self._k("jc", entry.conversation)]
        await self._eval(scripts.FINISH, keys, [entry.id])

    async def pending(self, conversation: str | None = None) -> list[Entry]:
        index = self._k("jseq") if conversation is None else self._k("jc", conversation)
        found = await self._eval(scripts.PENDING, [index, self._k("j"), self._k("js")], [])
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
            scripts.ACQUIRE, [self._k("lease", name), self._k("leasen")], [owner, int(ttl * 1000)]
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
        token = await self._eval(scripts.TURN, keys, args)
        return None if token is None else Lease(name, owner, int(token))

    async def renew(self, lease: Lease, ttl: float) -> bool:
        held = f"{lease.token}|{lease.owner}"
        done = await self._eval(
            scripts.RENEW, [self._k("lease", lease.name)], [held, int(ttl * 1000)]
        )
        return bool(done)

    async def release(self, lease: Lease) -> None:
        await self._eval(
            scripts.RELEASE, [self._k("lease", lease.name)], [f"{lease.token}|{lease.owner}"]
        )

    async def release_finished(self, lease: Lease, entry: Entry) -> None:
        keys = [
            self._k("lease", lease.name), self._k("j"), self._k("js"), self._k("jseq"),
            self._k("jc", entry.conversation),
        ]  # fmt: skip
        await self._eval(scripts.RELEASE_FINISHED, keys, [f"{lease.token}|{lease.owner}", entry.id])

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


class Scripts(Protocol):
    """Where another module's Lua script runs: the Redis store (``StoreUnavailable`` when it
    cannot).
    """

    async def run_script(self, source: str, sha: str, keys: list[str], args: list[Any]) -> Any: ...


def redis_of(store: object) -> RedisStore | None:
    """The Redis store behind ``store`` (timed or not), for what the replicas share through
    it; None for a store of another kind.
    """
    inner = store.inner if isinstance(store, TimedStore) else store
    return inner if isinstance(inner, RedisStore) else None
