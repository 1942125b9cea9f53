"""A command sent again after its connection dropped between Redis running it and its reply
coming back (gateway/state/resp.py resends it): the Redis store's steps come out as if run once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from gateway.pacing import Rate, SharedBudget
from gateway.state import Entry, Lease
from gateway.state.redis import RedisStore
from tests.redis_server import needs_redis, redis_server


class ReplyDropper:
    """A TCP proxy to Redis that, once armed, lets the next command through and closes the
    client's side when that command's reply comes, without passing the reply on.
    """

    def __init__(self, port: int) -> None:
        self._port = port
        self._armed = False
        self.dropped = asyncio.Event()
        self.connections = 0

    def arm(self) -> None:
        self.dropped.clear()
        self._armed = True

    async def serve(self, client_in: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
        self.connections += 1
        server_in, server = await asyncio.open_connection("127.0.0.1", self._port)
        try:
            await asyncio.gather(
                self._pump(client_in, server), self._pump(server_in, client, replies=True)
            )
        finally:
            client.transport.abort()
            server.transport.abort()

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, replies: bool = False
    ) -> None:
        while data := await source.read(65536):
            if replies and self._armed:  # the command ran: its reply is lost with the link
                self._armed = False
                sink.transport.abort()
                self.dropped.set()
                return
            sink.write(data)
            await sink.drain()
        sink.transport.abort()


@asynccontextmanager
async def through_dropper(tmp_path: Path) -> AsyncIterator[tuple[RedisStore, ReplyDropper]]:
    async with redis_server(tmp_path) as redis:
        dropper = ReplyDropper(redis.port)
        proxy = await asyncio.start_server(dropper.serve, "127.0.0.1", 0)
        store = RedisStore(f"redis://127.0.0.1:{proxy.sockets[0].getsockname()[1]}/0")
        await store.open()
        try:
            yield store, dropper
        finally:
            await store.close()
            proxy.close()


def _entry(id: str, conversation: str = "telegram:1") -> Entry:
    return Entry(id=id, conversation=conversation, channel="telegram", body={"n": id}, owner="r1")


async def _warm(store: RedisStore) -> None:
    # Every script loaded (a first EVALSHA is answered NOSCRIPT): the armed reply is the step's.
    lease = await store.take_turn("conversation:warm", "r1", 30.0, "warm", None)
    assert lease is not None
    warm = await store.append(_entry("warm", "warm"), "warm", 60.0)
    assert warm is not None
    await store.release_finished(lease, warm)


@needs_redis
async def test_an_append_sent_again_returns_its_entry_and_journals_it_once(tmp_path: Path):
    async with through_dropper(tmp_path) as (store, dropper):
        await _warm(store)
        dropper.arm()
        entry = await asyncio.wait_for(store.append(_entry("a1"), "telegram:update:7", 60.0), 30)
        assert dropper.dropped.is_set() and dropper.connections == 2  # it was sent again

        assert entry is not None and entry.id == "a1"  # not taken for a redelivery
        journaled = await store.pending("telegram:1")
        assert [(e.id, e.seq) for e in journaled] == [("a1", entry.seq)]
        # A true redelivery still is one.
        assert await store.append(_entry("a2"), "telegram:update:7", 60.0) is None
        assert [e.id for e in await store.pending()] == ["a1"]


@needs_redis
async def test_a_turn_taken_and_released_again_holds_and_frees_the_lease_once(tmp_path: Path):
    async with through_dropper(tmp_path) as (store, dropper):
        await _warm(store)
        entry = await store.append(_entry("t1"), None, 60.0)
        assert entry is not None
        entry.state = "running"
        dropper.arm()
        lease = await store.take_turn("conversation:t", "r1", 30.0, "telegram:1", entry.seq, entry)
        assert dropper.dropped.is_set()
        assert lease is not None and await store.holder("conversation:t") == "r1"
        assert [e.state for e in await store.pending()] == ["running"]

        dropper.arm()
        await store.release_finished(lease, entry)
        assert dropper.dropped.is_set()
        assert await store.holder("conversation:t") is None
        assert await store.pending() == []
        other = await store.take_turn("conversation:t", "r2", 30.0, "telegram:1", None)
        assert isinstance(other, Lease) and other.token > lease.token


@needs_redis
async def test_a_claim_sent_again_is_claimed_and_a_later_one_is_not(tmp_path: Path):
    async with through_dropper(tmp_path) as (store, dropper):
        await _warm(store)
        await store.claim("warm:claim", 1, 60.0)
        dropper.arm()
        assert await store.claim("telegram:update:9", 1, 60.0) == (True, None)
        assert dropper.dropped.is_set()
        assert await store.claim("telegram:update:9", 2, 60.0) == (False, 1)
        await store.forget("telegram:update:9")
        assert await store.claim("telegram:update:9", 3, 60.0) == (True, None)


@needs_redis
async def test_a_pacing_reservation_sent_again_takes_one_token(tmp_path: Path):
    async with through_dropper(tmp_path) as (store, dropper):
        key = "slashgate:pacing:resend"
        budget = SharedBudget(store, key, Rate(1, 10.0))  # a token comes back in 10 s
        await budget.prepare()  # the script loaded: the armed reply is the reservation's
        dropper.arm()
        # The bucket was full: no wait (reserved twice, the answer would be to wait 10 s).
        await asyncio.wait_for(budget.take(True, ()), 5)
        assert dropper.dropped.is_set() and dropper.connections == 2  # it was sent again
        full_at = int(await store.resp.call("GET", key))
        seconds, micros = await store.resp.call("TIME")
        ahead = full_at - (int(seconds) * 1_000_000 + int(micros))
        assert 9_000_000 < ahead <= 10_000_000  # one token out; two would be 20 s
