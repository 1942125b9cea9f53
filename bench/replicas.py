"""Two gateway replicas on one Redis against one: Telegram webhook updates (``/echo``, each in
its own chat) through to sendMessage on a fake Bot API.

The load comes from a separate client process (16 connections, updates spread round-robin over
the replicas); throughput is counted from the first update sent to the last reply the fake
received. CPU per update is the replicas' utime + stime (from /proc) over the run, summed.
``python bench/replicas.py [updates]``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.journal import cpu_of  # noqa: E402
from tests.redis_server import redis_server  # noqa: E402
from tests.reliability.gateway_process import GatewayProcess  # noqa: E402
from tests.telegram.fake_bot_api import TOKEN, FakeBotAPI  # noqa: E402

SECRET = "bench-secret"
CONNECTIONS = 16

CLIENT = """
import asyncio, json, sys, time
import aiohttp

async def main(urls, first, count, secret, connections):
    queue = asyncio.Queue()
    for n in range(first, first + count):
        queue.put_nowait(n)
    async def worker(session):
        while not queue.empty():
            n = queue.get_nowait()
            update = {"update_id": n, "message": {"message_id": n, "date": 0,
                      "chat": {"id": n, "type": "private"},
                      "from": {"id": n, "is_bot": False, "first_name": "B"},
                      "text": f"/echo m{n}",
                      "entities": [{"type": "bot_command", "offset": 0, "length": 5}]}}
            url = urls[n % len(urls)] + "/telegram/webhook"
            headers = {"X-Telegram-Bot-Api-Secret-Token": secret}
            async with session.post(url, json=update, headers=headers) as resp:
                assert resp.status == 200, (resp.status, await resp.text())
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(connections)))

args = json.loads(sys.argv[1])
asyncio.run(main(**args))
"""


async def load(urls: list[str], first: int, count: int) -> None:
    args = {"urls": urls, "first": first, "count": count, "secret": SECRET,
            "connections": CONNECTIONS}  # fmt: skip
    client = await asyncio.create_subprocess_exec(sys.executable, "-c", CLIENT, json.dumps(args))
    assert await client.wait() == 0


async def measure(replicas: int, updates: int, folder: Path) -> tuple[float, float]:
    """(updates per second, server CPU microseconds per update)."""
    async with redis_server(folder) as redis, FakeBotAPI() as fake:
        env = {
            "telegram_token": TOKEN, "telegram_secret": SECRET, "telegram_api_base": fake.url,
            "store": "redis", "redis_url": redis.url, "inventory_wait": "0",
            "log_level": "WARNING",
        }  # fmt: skip
        gateways = [GatewayProcess({**env, "replica_id": f"r{i}"}) for i in range(replicas)]
        for gateway in gateways:
            await gateway.start()
        urls = [g.url for g in gateways]
        try:
            sent = len(fake.calls_to("sendMessage"))
            await load(urls, 1, 200)  # warm-up
            await _replies(fake, sent + 200)
            pids = [g.process.pid for g in gateways if g.process is not None]
            cpu = sum(map(cpu_of, pids))
            started = time.perf_counter()
            await load(urls, 10_000, updates)
            await _replies(fake, sent + 200 + updates)
            elapsed = time.perf_counter() - started
            cpu = sum(map(cpu_of, pids)) - cpu
        except BaseException:
            for gateway in gateways:  # why a replica refused: its own warnings
                print("".join(gateway.output[-5:]), file=sys.stderr)
            raise
        finally:
            for gateway in gateways:
                await gateway.stop()
    return updates / elapsed, cpu / updates * 1e6


async def _replies(fake: FakeBotAPI, count: int) -> None:
    async with fake._changed:
        await asyncio.wait_for(
            fake._changed.wait_for(lambda: len(fake.calls_to("sendMessage")) >= count), 600
        )


async def main(updates: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        one = await measure(1, updates, Path(folder))
        two = await measure(2, updates, Path(folder))
    print(f"replicas on Redis, Telegram /echo ({updates} updates, {CONNECTIONS} connections)")
    print(f"{'replicas':<10}{'updates/s':>12}{'CPU us/update':>16}")
    for count, (rate, cpu) in ((1, one), (2, two)):
        print(f"{count:<10}{rate:>12.0f}{cpu:>16.0f}")
    print(f"2 against 1: {two[0] / one[0]:.2f}x the throughput, {two[1] / one[1]:.2f}x the CPU")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
