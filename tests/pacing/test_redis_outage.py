"""The shared budget when Redis hangs or goes away: the replica paces alone at its share of
the limit for a while instead of waiting out a timeout on every call (one caller at a time
holds the bot's line, so that would be one call per timeout for the whole bot), asks Redis
again once that while is over, and says so in the log once per outage.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from gateway.pacing import Pacer, Rate, SharedBudget
from tests.pacing.redis import opened
from tests.redis_server import needs_redis, redis_server

GUARD = 30.0
OFF = Rate(0)
KEY = "slashgate:pacing:test"


class Silent:
    """Accepts connections, reads what comes, never answers: a Redis that hangs."""

    def __init__(self) -> None:
        self.connections = 0
        self.received = bytearray()
        self._arrived = asyncio.Event()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        while chunk := await reader.read(65536):
            self.received += chunk
            self._arrived.set()
        writer.close()

    @property
    def scripts(self) -> int:
        return self.received.count(b"EVALSHA")

    async def scripts_reach(self, count: int) -> None:
        while self.scripts < count:
            self._arrived.clear()
            await self._arrived.wait()


def warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


async def test_a_hanging_redis_is_asked_once_per_back_off_and_calls_go_at_the_local_pace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    silent = Silent()
    server = await asyncio.start_server(silent.serve, "127.0.0.1", 0)
    url = f"redis://127.0.0.1:{server.sockets[0].getsockname()[1]}/0"
    rate = Rate(50)
    loop = asyncio.get_running_loop()
    caplog.set_level(logging.WARNING, logger="slashgate.pacing")
    try:
        async with opened(url) as store:
            budget = SharedBudget(store, KEY, rate, timeout=0.3, alone_for=3.0)
            pacer = Pacer(budget)
            await asyncio.wait_for(pacer.acquire("first", OFF), GUARD)  # after the timeout
            await asyncio.wait_for(silent.scripts_reach(1), GUARD)
            assert silent.connections == 1

            start = loop.time()
            calls = (pacer.acquire(f"chat{i}", OFF) for i in range(20))
            await asyncio.wait_for(asyncio.gather(*calls), GUARD)
            assert loop.time() - start >= 19 * rate.interval * 0.99  # the limit, kept alone
            assert loop.time() < budget.alone_until  # all of them inside the back-off

            await asyncio.sleep(budget.alone_until - loop.time())
            await asyncio.wait_for(pacer.acquire("after", OFF), GUARD)  # asks, times out
            await asyncio.wait_for(silent.scripts_reach(2), GUARD)
            # 22 calls, 2 questions: none of the 20 in the back-off asked Redis.
            assert silent.scripts == 2
    finally:
        server.close()
        await server.wait_closed()
    assert len(warnings(caplog, "Redis failed")) == 1  # one outage, one line


@needs_redis
async def test_a_replica_paces_at_its_share_while_redis_is_down_and_shares_again_after(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rate = Rate(50)
    loop = asyncio.get_running_loop()
    caplog.set_level(logging.WARNING, logger="slashgate.pacing")
    async with redis_server(tmp_path) as redis, opened(redis.url) as one, opened(redis.url) as two:
        budget = SharedBudget(one, KEY, rate, alone_for=3.0)
        other = SharedBudget(two, KEY, rate)
        pacer = Pacer(budget)
        await other.prepare()  # two replicas use the budget
        await asyncio.wait_for(pacer.acquire("before", OFF), GUARD)

        await redis.stop()
        start = loop.time()
        calls = (pacer.acquire(f"chat{i}", OFF) for i in range(10))
        await asyncio.wait_for(asyncio.gather(*calls), GUARD)
        assert budget.alone_until > 0
        # Half the limit each: 10 calls at least 9 of its intervals apart.
        assert loop.time() - start >= 9 * 2 * rate.interval * 0.99
        assert warnings(caplog, "1/2 of the limit")

        await redis.start()  # empty: nothing persisted
        await asyncio.sleep(budget.alone_until - loop.time())
        await asyncio.wait_for(pacer.acquire("back", OFF), GUARD)
        assert await one.resp.call("EXISTS", KEY) == 1  # reserved in Redis again
    assert len(warnings(caplog, "Redis failed")) == 1
    assert len(warnings(caplog, "Redis answers again")) == 1
