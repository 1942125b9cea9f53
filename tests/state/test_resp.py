"""The Redis store's own client (gateway/state/resp.py) where a real redis-server alone does
not show it: a server that never answers, the database a URL names, and a caller cancelled
at any point of a command.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gateway.state import StoreUnavailable
from gateway.state.redis import RedisStore
from gateway.state.resp import Resp
from tests.redis_server import needs_redis, redis_server


async def test_a_server_that_never_answers_is_store_unavailable_after_the_timeout():
    accepted: list[asyncio.StreamWriter] = []

    async def silent(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)  # read nothing, answer nothing

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = Resp(f"redis://127.0.0.1:{port}/0", timeout=0.3)
    try:
        with pytest.raises(StoreUnavailable, match="no reply"):
            await client.call("PING")
    finally:
        client.close()
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_a_url_of_another_scheme_is_refused_by_name_without_its_password():
    with pytest.raises(StoreUnavailable, match="memcached://") as refused:
        Resp("memcached://user:hunter2@127.0.0.1:11211")
    assert "hunter2" not in str(refused.value)
    with pytest.raises(StoreUnavailable, match="port") as refused:
        Resp("redis://user:hunter2@127.0.0.1:port")
    assert "hunter2" not in str(refused.value)


@needs_redis
async def test_the_database_the_url_names_is_the_one_used(tmp_path: Path):
    async with redis_server(tmp_path) as server:
        base = server.url.rsplit("/", 1)[0]
        three, zero, again = (
            RedisStore(f"{base}/3"),
            RedisStore(f"{base}/0"),
            RedisStore(f"{base}/3"),
        )
        for store in (three, zero, again):
            await store.open()
        try:
            await three.set("k", {"in": 3})
            assert await zero.get("k") is None
            assert await again.get("k") == {"in": 3}
        finally:
            for store in (three, zero, again):
                await store.close()


@needs_redis
async def test_a_caller_cancelled_at_any_point_of_a_command_ends_cancelled(tmp_path: Path):
    # The pacing's shared budget relies on it (no shield): a cancel lost mid-command kept a
    # cancelled preview streaming and its final reply waiting (tests/pacing).
    async with redis_server(tmp_path) as server:
        connected = Resp(server.url)
        for fresh in (True, False):  # while it connects, then on an open connection
            tried = 0
            for turns in range(10_000):  # cancelled after 0, 1, 2... turns of the loop
                client = Resp(server.url) if fresh else connected
                caller = asyncio.create_task(client.call("INCR", "n"))
                for _ in range(turns):
                    await asyncio.sleep(0)
                if not caller.cancel():
                    break  # it went before its cancel: every await on its way was tried
                await asyncio.wait([caller], timeout=30)
                assert caller.cancelled(), f"a cancel after {turns} turns was lost"
                # The connection is still in step: the next reply is this command's own.
                assert await client.call("ECHO", str(turns)) == str(turns).encode()
                if fresh:
                    client.close()
                tried += 1
            assert tried > 1
        connected.close()
