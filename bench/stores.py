"""Server CPU per Telegram update on each store: ``slashgate serve`` on the memory store, on
SQLite (the default, ``synchronous=FULL``) and on Redis (one replica), ``/echo`` updates at 16
connections through to sendMessage on a fake Bot API (the load of bench/replicas.py).

CPU per update is the gateway's utime + stime (from /proc) over the run, and for Redis also
the redis-server process's. The stores take turns, round after round, so that a change of
the shared machine's speed reaches each alike; the medians over the rounds are printed, with
each store's ratio to the memory store. ``python bench/stores.py [updates] [--rounds N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.journal import cpu_of  # noqa: E402
from bench.replicas import CONNECTIONS, SECRET, _replies, load  # noqa: E402
from tests.redis_server import redis_server  # noqa: E402
from tests.reliability.gateway_process import GatewayProcess  # noqa: E402
from tests.telegram.fake_bot_api import TOKEN, FakeBotAPI  # noqa: E402

STORES = ("memory", "sqlite", "redis")
WARMUP = 200


async def measure(store: str, updates: int, folder: Path) -> tuple[float, float, float]:
    """(updates per second, gateway CPU us per update, redis-server CPU us per update)."""
    async with AsyncExitStack() as stack:
        fake = await stack.enter_async_context(FakeBotAPI())
        env = {
            "telegram_token": TOKEN, "telegram_secret": SECRET, "telegram_api_base": fake.url,
            "store": store, "inventory_wait": "0", "log_level": "WARNING",
            "state_path": str(folder / f"{store}-{time.monotonic_ns()}.sqlite3"),
        }  # fmt: skip
        server_pid = None
        if store == "redis":
            redis = await stack.enter_async_context(redis_server(folder))
            assert redis.process is not None
            env["redis_url"], server_pid = redis.url, redis.process.pid
        gateway = GatewayProcess(env)
        await gateway.start()
        try:
            assert gateway.process is not None
            pid = gateway.process.pid
            sent = len(fake.calls_to("sendMessage"))
            await load([gateway.url], 1, WARMUP)
            await _replies(fake, sent + WARMUP)
            cpu = cpu_of(pid)
            server = cpu_of(server_pid) if server_pid else 0.0
            started = time.perf_counter()
            await load([gateway.url], 10_000, updates)
            await _replies(fake, sent + WARMUP + updates)
            elapsed = time.perf_counter() - started
            cpu = cpu_of(pid) - cpu
            server = (cpu_of(server_pid) - server) if server_pid else 0.0
        except BaseException:
            print("".join(gateway.output[-5:]), file=sys.stderr)  # why it refused
            raise
        finally:
            await gateway.stop()
    return updates / elapsed, cpu / updates * 1e6, server / updates * 1e6


async def main(updates: int, rounds: int) -> None:
    figures: dict[str, list[tuple[float, float, float]]] = {store: [] for store in STORES}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(rounds):
            for store in STORES:
                figures[store].append(await measure(store, updates, Path(folder)))
    medians = {
        store: tuple(statistics.median(run[i] for run in runs) for i in range(3))
        for store, runs in figures.items()
    }
    base = medians["memory"][1]
    print(
        f"stores, Telegram /echo ({updates} updates, {CONNECTIONS} connections, "
        f"{rounds} rounds; medians)"
    )
    header = (
        ("updates/s", 11), ("CPU us/update", 15), ("redis-server us", 17), ("x", 7),
        ("x with server", 15),
    )  # fmt: skip
    print(f"{'store':<10}" + "".join(f"{name:>{width}}" for name, width in header))
    for store, (rate, cpu, server) in medians.items():
        print(
            f"{store:<10}{rate:>11.0f}{cpu:>15.0f}{server:>17.0f}{cpu / base:>7.2f}"
            f"{(cpu + server) / base:>15.2f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("updates", nargs="?", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.updates, args.rounds))
