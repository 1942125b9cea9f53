"""Several gateway processes on one Redis serve one Telegram bot behind a load balancer (the
test delivers each update to the replica it chooses): one reply per update, a conversation's
turns in order whichever replica took them, a dead replica's turns taken over, one replica
polling and publishing, and Redis restarted under a running turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from tests.conftest import OPEN_ENV
from tests.redis_server import RedisServer, needs_redis, redis_server
from tests.reliability.gateway_process import GatewayProcess
from tests.telegram.fake_bot_api import TOKEN, FakeBotAPI
from tests.telegram.helpers import message_update

pytestmark = needs_redis

SECRET = "replica-secret-0123456789"
LEASE = 1.5  # seconds: a dead replica's conversations wait about this long
PATIENCE = 60.0  # seconds any one expectation may take on a loaded machine


@asynccontextmanager
async def replicas(
    tmp_path: Path, count: int, **settings: str
) -> AsyncIterator[tuple[FakeBotAPI, RedisServer, list[GatewayProcess]]]:
    async with redis_server(tmp_path) as redis, FakeBotAPI() as fake:
        env = {
            "telegram_token": TOKEN,
            "telegram_secret": SECRET,
            "telegram_api_base": fake.url,
            "store": "redis",
            "redis_url": redis.url,
            "lease_ttl": str(LEASE),
            "inventory_wait": "0",
            "log_level": "WARNING",
            **OPEN_ENV,
            **settings,
        }
        processes = [GatewayProcess({**env, "replica_id": f"r{i}"}) for i in range(count)]
        await asyncio.gather(*(process.start() for process in processes))
        try:
            yield fake, redis, processes
        finally:
            await asyncio.gather(*(p.stop() for p in processes))


async def deliver(replica: GatewayProcess, update: dict[str, Any]) -> int:
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"{replica.url}/telegram/webhook", json=update, headers=headers
        ) as resp:
            return resp.status


async def until(fake: FakeBotAPI, predicate: Callable[[], bool]) -> None:
    async def wait() -> None:
        async with fake._changed:
            await fake._changed.wait_for(predicate)

    await asyncio.wait_for(wait(), PATIENCE)


async def test_an_update_delivered_to_both_replicas_is_answered_once(tmp_path: Path):
    async with replicas(tmp_path, 2) as (fake, _, (a, b)):
        update = message_update(1, "/echo once", update_id=1)
        assert await asyncio.gather(deliver(a, update), deliver(b, update)) == [200, 200]
        await until(fake, lambda: bool(fake.texts(1)))
        # A later turn of the chat queues behind any second run of the first update (plain text
        # queues where a slash command would be answered busy): its reply must come right after.
        await deliver(a, message_update(1, "later", update_id=2))
        await until(fake, lambda: len(fake.texts(1)) >= 2)
        once, later = fake.texts(1)
        assert once == "once" and "later" in later


async def test_a_conversations_turns_run_in_order_across_replicas(tmp_path: Path):
    async with replicas(tmp_path, 2) as (fake, _, (a, b)):
        # Two lines: a one-line run ends as its first preview asks for a slot (Redis pacing),
        # and the final reply then takes the preview's place (docs/rate-limits.md).
        assert await deliver(a, message_update(7, "/slow 2", update_id=10)) == 200
        await until(fake, lambda: bool(fake.calls_to("sendMessageDraft")))  # it runs on a
        assert await deliver(b, message_update(7, "and then this", update_id=11)) == 200
        await until(fake, lambda: len(fake.texts(7)) >= 2)
        first, second = fake.texts(7)
        assert first == "1/2\n2/2\ndone"
        assert "and then this" in second


async def test_a_turn_on_one_replica_makes_commands_busy_and_is_cancelled_from_another(
    tmp_path: Path,
):
    async with replicas(tmp_path, 2) as (fake, _, (a, b)):
        # Long enough that only the cancel can end it within PATIENCE.
        assert await deliver(a, message_update(5, "/slow 120", update_id=40)) == 200
        await until(fake, lambda: bool(fake.calls_to("sendMessageDraft")))
        assert await deliver(b, message_update(5, "/echo now", update_id=41)) == 200
        await until(fake, lambda: bool(fake.texts(5)))
        [busy] = fake.texts(5)
        assert "/echo" in busy and "busy" in busy
        assert await deliver(b, message_update(5, "/cancel", update_id=42)) == 200
        await until(fake, lambda: len(fake.texts(5)) >= 3)
        answers = fake.texts(5)[1:]
        assert "Cancelled the running turn." in answers
        [ended] = [t for t in answers if t != "Cancelled the running turn."]
        assert ended.startswith("1/120") and "cancelled" in ended


async def test_a_dead_replicas_running_turn_is_taken_over_with_a_notice(tmp_path: Path):
    async with replicas(tmp_path, 2) as (fake, _, (a, b)):
        assert await deliver(a, message_update(9, "/slow 30", update_id=20)) == 200
        await until(fake, lambda: bool(fake.calls_to("sendMessageDraft")))
        await a.kill()
        await until(fake, lambda: bool(fake.texts(9)))
        [notice] = fake.texts(9)
        assert "/slow" in notice and "restarted" in notice
        assert await deliver(b, message_update(9, "/echo still here", update_id=21)) == 200
        await until(fake, lambda: len(fake.texts(9)) >= 2)
        assert fake.texts(9)[1] == "still here"


async def test_one_replica_registers_the_webhook_and_another_takes_over(tmp_path: Path):
    settings = {"telegram_webhook_url": "https://bot.example.test/telegram/webhook"}
    async with replicas(tmp_path, 2, **settings) as (fake, _, (a, b)):
        await until(fake, lambda: bool(fake.calls_to("setWebhook")))
        assert len(fake.calls_to("setWebhook")) == 1
        menus = len(fake.calls_to("setMyCommands", "default"))
        assert menus == 1  # the default menu, once (by the leader alone)
        leader = await _holder(a)
        await (a if leader == "r0" else b).kill()
        await until(fake, lambda: len(fake.calls_to("setWebhook")) == 2)


async def _holder(replica: GatewayProcess) -> str:
    from gateway.state.redis import RedisStore

    store = RedisStore(replica.env["redis_url"])
    await store.open()
    try:
        holder = await store.holder("telegram:leader")
    finally:
        await store.close()
    assert holder is not None
    return holder


async def test_redis_restarted_under_a_running_turn(tmp_path: Path):
    async with replicas(tmp_path, 1) as (fake, redis, (a,)):
        assert await deliver(a, message_update(3, "/slow 2", update_id=30)) == 200
        await until(fake, lambda: bool(fake.calls_to("sendMessageDraft")))
        await redis.stop()
        # The store is down: an update is refused, so that Telegram delivers it again.
        assert await deliver(a, message_update(4, "/echo refused", update_id=31)) == 503
        await redis.start()
        await until(fake, lambda: bool(fake.texts(3)))
        assert fake.texts(3) == ["1/2\n2/2\ndone"]
        # Telegram delivers again after each 503: the first redeliveries may still meet a
        # connection of the pool that died with Redis.
        statuses = [await deliver(a, message_update(4, "/echo refused", update_id=31))]
        while statuses[-1] == 503 and len(statuses) < 10:
            statuses.append(await deliver(a, message_update(4, "/echo refused", update_id=31)))
        assert statuses[-1] == 200, statuses
        await until(fake, lambda: bool(fake.texts(4)))
        assert fake.texts(4) == ["refused"]
        assert fake.texts(3) == ["1/2\n2/2\ndone"]  # one reply, whatever Redis went through
