"""The access records in real stores: replicas on one Redis honour an approval made with the
CLI within a second; changes made at once by several processes all land (none overwrites
another); a record written to SQLite is there for the next process.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from gateway.access import Access, Policy
from gateway.inbound import InboundMessage
from gateway.metrics import Metrics
from gateway.state import SqliteStore
from gateway.state.redis import RedisStore
from tests.access.cli import access
from tests.conftest import make_settings
from tests.redis_server import REDIS, redis_server

needs_redis = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed")
POLICY = Policy(chat=True)  # the defaults: pairing, groups listed


def direct(user: str) -> InboundMessage:
    return InboundMessage("telegram", user, user, "hello", direct=True)


@needs_redis
async def test_two_replicas_honour_a_cli_approval_within_a_second(tmp_path: Path) -> None:
    settings = make_settings()
    async with redis_server(tmp_path) as server:
        stores = [RedisStore(server.url, "slashgate:") for _ in range(2)]
        for store in stores:
            await store.open()
        replicas = [Access(settings, store, Metrics()) for store in stores]
        for replica in replicas:
            replica.configure("telegram", POLICY)
        try:
            asked = await replicas[0].admit(direct("41"), POLICY)
            assert asked is not None and not isinstance(asked, str)
            assert await replicas[1].admit(direct("41"), POLICY) == "pairing_waiting"
            cli = {"SLASHGATE_STORE": "redis", "SLASHGATE_REDIS_URL": server.url}
            [code] = (await replicas[0].books.of("telegram")).waiting(time.time())
            said = await access(cli, "approve", "telegram", code)
            assert said.status == 0, said.err
            approved_at = time.monotonic()
            await asyncio.sleep(max(r.books.max_age for r in replicas))
            for replica in replicas:
                assert await replica.admit(direct("41"), POLICY) is None
            assert time.monotonic() - approved_at < 1.5
        finally:
            for store in stores:
                await store.close()


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("redis", marks=needs_redis)])
async def test_changes_made_at_once_by_several_processes_all_land(
    kind: str, tmp_path: Path
) -> None:
    async def check(cli: dict[str, str]) -> None:
        ids = [str(n) for n in range(100, 106)]
        said = await asyncio.gather(*(access(cli, "allow", "telegram", i) for i in ids))
        assert [s.status for s in said] == [0] * len(ids), [s.err for s in said]
        listing = await access(cli, "list")
        approved = next(line for line in listing.out.splitlines() if "(approved)" in line)
        assert approved.split(": ", 1)[1] == ", ".join(ids)

    if kind == "sqlite":
        path = str(tmp_path / "state.sqlite3")
        await check({"SLASHGATE_STORE": "sqlite", "SLASHGATE_STATE_PATH": path})
        store = SqliteStore(path)  # the next process finds them
        await store.open()
        try:
            assert len((await store.get("access:telegram"))["members"]) == 6
        finally:
            await store.close()
        return
    async with redis_server(tmp_path) as server:
        await check({"SLASHGATE_STORE": "redis", "SLASHGATE_REDIS_URL": server.url})


@needs_redis
async def test_the_replicas_share_one_bucket_per_sender(tmp_path: Path) -> None:
    settings = make_settings(sender_rate=20.0, sender_burst=5, sender_max_queued=0)
    async with redis_server(tmp_path) as server:
        stores = [RedisStore(server.url, "slashgate:") for _ in range(2)]
        for store in stores:
            await store.open()
        replicas = [Access(settings, store, Metrics()) for store in stores]
        try:
            taken = [await replicas[n % 2].limits.take("telegram:41") is None for n in range(10)]
        finally:
            for store in stores:
                await store.close()
    assert taken == [True] * 5 + [False] * 5  # one burst between them, not one each
