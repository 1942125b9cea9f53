"""The journal's cost per message, per store, against the memory store in the same run.

One message's journal work is what the core does for a turn: journal it with its dedupe claim
(before the platform is acknowledged), mark it running, mark it answered, drop it once
delivered. Measured as CPU time of this process per message (SQLite's work runs in a thread
of this process, so it is counted) plus, for Redis, the redis-server process's CPU time (read
from /proc), and wall time per message: one message at a time (the latency a turn pays), then
16 at a time (inputs arriving together: SQLite's group commit shares their fsyncs).
``python bench/journal.py [messages]``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.inbound import Reply  # noqa: E402
from gateway.journal import Journal, reply_record  # noqa: E402
from gateway.state import MemoryStore, SqliteStore, StateStore  # noqa: E402
from gateway.state.redis import RedisStore  # noqa: E402
from tests.redis_server import redis_server  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_of(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


async def run(store: StateStore, messages: int, at_once: int = 1) -> tuple[float, float]:
    """(CPU seconds of this process, wall seconds), each per message; ``at_once`` messages
    in flight at a time.
    """
    journal = Journal(store, "bench", dedupe_ttl=3600, lease_ttl=10)
    body = {"update": {"update_id": 1, "message": {"text": "/echo hello", "chat": {"id": 1}}}}
    reply = reply_record(Reply("hello", None, "end_turn", slash=True))
    run_id = time.perf_counter_ns()  # claims of an earlier run (the warm-up) stay held

    async def turns(first: int) -> None:
        for n in range(first, messages, at_once):
            claim = f"t:{run_id}:{n}"
            entry = await journal.append("telegram", f"telegram:{n % 100}", body, claim)
            assert entry is not None
            entry.state, entry.command = "running", "echo"
            await journal.mark(entry)
            entry.state, entry.reply = "answered", reply
            await journal.mark(entry)
            await journal.finish(entry)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(turns(first) for first in range(at_once)))
    return (time.process_time() - cpu) / messages, (time.perf_counter() - wall) / messages


Row = tuple[str, float, float, float]  # store, CPU, its server's CPU, wall: per message


async def measure(name: str, store: StateStore, messages: int, pid: int | None) -> list[Row]:
    """One row a concurrency (1, then 16 at a time), after a warm-up."""
    rows = []
    await run(store, 200)  # warm-up: imports and first allocations
    for at_once in (1, 16):
        before = cpu_of(pid) if pid else 0.0
        cpu, wall = await run(store, messages, at_once)
        server = (cpu_of(pid) - before) / messages if pid else 0.0
        rows.append((name, cpu, server, wall))
    return rows


async def main(messages: int) -> None:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as folder:
        rows += await measure("memory", MemoryStore(), messages, None)

        sqlite = SqliteStore(Path(folder) / "bench.sqlite3")
        await sqlite.open()
        rows += await measure("sqlite (synchronous=FULL)", sqlite, messages, None)
        await sqlite.close()

        if shutil.which("redis-server"):
            async with redis_server(Path(folder)) as server:
                redis = RedisStore(server.url)
                await redis.open()
                assert server.process is not None
                rows += await measure("redis", redis, messages, server.process.pid)
                await redis.close()

    header = ("CPU us", 10), ("store CPU us", 14), ("wall us", 10), ("CPU x", 8), ("wall x", 8)
    for n, title in enumerate(("one at a time", "16 at a time")):
        print(f"journal cost per message ({messages} messages, {title}; 4 store steps each)")
        print(f"{'store':<28}" + "".join(f"{name:>{width}}" for name, width in header))
        base_cpu, base_wall = rows[n][1], rows[n][3]
        for name, cpu, store_cpu, wall in rows[n::2]:
            print(
                f"{name:<28}{cpu * 1e6:>10.0f}{store_cpu * 1e6:>14.0f}{wall * 1e6:>10.0f}"
                f"{(cpu + store_cpu) / base_cpu:>8.1f}{wall / base_wall:>8.1f}"
            )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
