"""Server CPU per Telegram update on each store: ``slashgate serve`` on the memory store, on
SQLite (the default, ``synchronous=FULL``) and on Redis (one replica), ``/echo`` updates at 16
connections through to sendMessage on a fake Bot API (the processes of bench/replicas.py:
bench/loadrig.py).

CPU per update is the gateway's utime + stime (from /proc) over the run, and for Redis also
the redis-server process's. The stores take turns, round after round, so that a change of
the shared machine's speed reaches each alike; the medians over the rounds are printed, with
each store's ratio to the memory store of the same tree. ``--tree NAME=PATH`` (repeatable)
measures other source trees in the same rounds, interleaved (a tree before a change beside
the one after it). ``python bench/stores.py [updates] [--rounds N] [--stores memory,redis]``.
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

from bench.loadrig import (  # noqa: E402
    SECRET,
    TOKEN,
    Fakes,
    Proc,
    cpu_of,
    gateway,
    load,
    open_access,
    redis_binary,
    redis_server,
    redis_url,
    unpaced,
    url_of,
)

STORES = ("memory", "sqlite", "redis")
WARMUP = 200
CONNECTIONS = 16


async def measure(store: str, updates: int, folder: Path, tree: Path) -> tuple[float, float, float]:
    """(updates per second, gateway CPU us per update, redis-server CPU us per update)."""
    async with AsyncExitStack() as stack:
        fakes = Fakes(1)
        await fakes.start()
        stack.push_async_callback(fakes.stop)
        env = {
            "telegram_token": TOKEN, "telegram_secret": SECRET,
            "telegram_api_base": fakes.urls[0], "store": store, "inventory_wait": "0",
            "log_level": "WARNING", **unpaced(tree), **open_access(tree),
            "state_path": str(folder / f"{store}-{time.monotonic_ns()}.sqlite3"),
        }  # fmt: skip
        server: Proc | None = None
        if store == "redis":
            binary = redis_binary()
            assert binary is not None, "no redis-server: set SLASHGATE_REDIS_SERVER"
            server = redis_server(binary, folder)
            await server.start()
            stack.push_async_callback(server.stop, True)
            env["redis_url"] = redis_url(server)
        proc = gateway(env, tree)
        await proc.start()
        try:
            url = url_of(proc)
            await load([url], 1, WARMUP, lanes=CONNECTIONS)
            await fakes.replies(WARMUP)
            cpu = cpu_of(proc.pid)
            redis_cpu = cpu_of(server.pid) if server else 0.0
            started = time.monotonic()
            await load([url], 10_000_000, updates, lanes=CONNECTIONS)
            done = await fakes.replies(WARMUP + updates)
            cpu = cpu_of(proc.pid) - cpu
            redis_cpu = (cpu_of(server.pid) - redis_cpu) if server else 0.0
        except BaseException:
            print("".join(proc.output[-5:]), file=sys.stderr)  # why it refused
            raise
        finally:
            await proc.stop()
    return updates / (done - started), cpu / updates * 1e6, redis_cpu / updates * 1e6


async def main(updates: int, rounds: int, stores: list[str], trees: dict[str, Path]) -> None:
    runs = [(name, store) for name in trees for store in stores]
    figures: dict[tuple[str, str], list[tuple[float, float, float]]] = {run: [] for run in runs}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(rounds):
            for name, store in runs:
                figure = await measure(store, updates, Path(folder), trees[name])
                figures[name, store].append(figure)
    medians = {
        run: tuple(statistics.median(one[i] for one in ones) for i in range(3))
        for run, ones in figures.items()
    }
    print(
        f"stores, Telegram /echo ({updates} updates, {CONNECTIONS} connections, "
        f"{rounds} rounds; medians)"
    )
    header = (
        ("updates/s", 11), ("CPU us/update", 15), ("redis-server us", 17), ("x", 7),
        ("x with server", 15),
    )  # fmt: skip
    print(f"{'tree':<8}{'store':<10}" + "".join(f"{name:>{width}}" for name, width in header))
    for (name, store), (rate, cpu, server) in medians.items():
        base = medians.get((name, "memory"), (0.0, cpu, 0.0))[1]
        print(
            f"{name:<8}{store:<10}{rate:>11.0f}{cpu:>15.0f}{server:>17.0f}{cpu / base:>7.2f}"
            f"{(cpu + server) / base:>15.2f}"
        )


def _tree(given: str) -> tuple[str, Path]:
    name, _, path = given.partition("=")
    return name, Path(path).resolve()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("updates", nargs="?", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stores", default=",".join(STORES))
    parser.add_argument("--tree", type=_tree, action="append", help="NAME=PATH, repeatable")
    args = parser.parse_args()
    chosen = dict(args.tree) if args.tree else {"this": ROOT}
    asyncio.run(main(args.updates, args.rounds, args.stores.split(","), chosen))
