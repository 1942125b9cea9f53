"""The Redis store's own client (gateway/state/resp.py) where a real redis-server alone does
not show it: a server that never answers, and the database a URL names.
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


async def test_a_url_of_another_scheme_is_refused_by_name():
    with pytest.raises(StoreUnavailable, match="memcached://"):
        Resp("memcached://127.0.0.1:11211")


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
