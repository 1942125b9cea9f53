"""The Redis store's own client (gateway/state/resp.py) while it connects: a caller cancelled
then, a connection lost as it opens, and a client closed then. A fake Redis on 127.0.0.1 that
holds back its answer to AUTH until the test lets it go, so each step comes in a known order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import hiredis

from gateway.state.resp import Resp


@dataclass
class FakeRedis:
    """Answers PING with PONG and AUTH with OK; the first connection's AUTH waits for
    ``answer_auth``, and its connection is then closed when ``close_after_auth``.
    """

    port: int = 0
    close_after_auth: bool = False
    auth_seen: asyncio.Event = field(default_factory=asyncio.Event)
    answer_auth: asyncio.Event = field(default_factory=asyncio.Event)
    first_done: asyncio.Event = field(default_factory=asyncio.Event)
    first_read_eof: bool = False
    connections: int = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        first = self.connections == 1
        parser = hiredis.Reader()
        try:
            while data := await reader.read(65536):
                parser.feed(data)
                while (command := parser.gets()) is not False:
                    if command[0].upper() == b"AUTH":
                        if first:
                            self.auth_seen.set()
                            await self.answer_auth.wait()
                        writer.write(b"+OK\r\n")
                        if first and self.close_after_auth:
                            return
                    else:
                        writer.write(b"+PONG\r\n")
            self.first_read_eof = self.first_read_eof or first
        finally:
            writer.close()
            if first:
                self.first_done.set()


@asynccontextmanager
async def fake_redis(**options: bool) -> AsyncIterator[FakeRedis]:
    fake = FakeRedis(**options)
    server = await asyncio.start_server(fake.serve, "127.0.0.1", 0)
    fake.port = server.sockets[0].getsockname()[1]
    try:
        yield fake
    finally:
        server.close()
        await server.wait_closed()


async def _cancelled_while_connecting(client: Resp, fake: FakeRedis) -> None:
    caller = asyncio.create_task(client.call("PING"))
    await fake.auth_seen.wait()
    caller.cancel()
    await asyncio.wait([caller], timeout=30)
    assert caller.cancelled()


async def test_a_caller_cancelled_while_connecting_leaves_no_stale_connection_behind():
    # Its connection then opened and dropped (Redis restarted): the next command was sent on
    # the dropped connection and waited for ever, the watch skipping a lost connection.
    async with fake_redis(close_after_auth=True) as fake:
        client = Resp(f"redis://:secret@127.0.0.1:{fake.port}/0", timeout=5.0)
        try:
            await _cancelled_while_connecting(client, fake)
            fake.answer_auth.set()
            await fake.first_done.wait()
            async with asyncio.timeout(30):
                assert await client.call("PING") == b"PONG"
            assert fake.connections == 2
        finally:
            client.close()


async def test_a_client_closed_while_connecting_closes_the_connection_it_was_opening():
    async with fake_redis() as fake:
        client = Resp(f"redis://:secret@127.0.0.1:{fake.port}/0", timeout=5.0)
        await _cancelled_while_connecting(client, fake)
        client.close()
        fake.answer_auth.set()
        async with asyncio.timeout(30):
            await fake.first_done.wait()
        assert fake.first_read_eof
