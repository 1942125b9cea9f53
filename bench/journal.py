"""The journal's cost per message, per store, against the memory store in the same run.

One message's journal work is what the core does for a turn: journal it with its dedupe claim
(before the platform is acknowledged), mark it running, mark it answered, drop it once
delivered. Measured as CPU time of this process per message (SQLite's work runs in worker
threads of this process, so it is counted) plus, for Redis, the redis-server process's CPU
time (read from /proc), and wall time per message (one message at a time: the latency a
turn pays). ``python bench/journal.py [messages]``.
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


async def run(store: StateStore, messages: int) -> tuple[float, float]:
    """(CPU seconds of this process, wall seconds), each per message."""
    journal = Journal(store, "bench", dedupe_ttl=3600, lease_ttl=10)
    body = {"update": {"update_id": 1, "message": {"text": "/echo hello", "chat": {"id": 1}}}}
    reply = reply_record(Reply("hello", None, "end_turn", slash=True))
    run_id = time.perf_counter_ns()  # claims of an earlier run (the warm-up) stay held
    cpu, wall = time.process_time(), time.perf_counter()
    for n in range(messages):
        claim = f"t:{run_id}:{n}"
        entry = await journal.append("telegram", f"telegram:{n % 100}", body, claim)
        assert entry is not None
        entry.state, entry.command = "running", "echo"
        await journal.mark(entry)
        entry.state, entry.reply = "answered", reply
        await journal.mark(entry)
        await journal.finish(entry)
    return (time.process_time() - cpu) / messages, (time.perf_counter() - wall) / messages


async def main(messages: int) -> None:
    rows: list[tuple[str, float, float, float]] = []
    with tempfile.TemporaryDirectory() as folder:
        memory = MemoryStore()
        await run(memory, 200)  # warm-up: imports and first allocations
        cpu, wall = await run(memory, messages)
        rows.append(("memory", cpu, 0.0, wall))

        sqlite = SqliteStore(Path(folder) / "bench.sqlite3")
        await sqlite.open()
        await run(sqlite, 200)
        cpu, wall = await run(sqlite, messages)
        rows.append(("sqlite (synchronous=FULL)", cpu, 0.0, wall))
        await sqlite.close()

        if shutil.which("redis-server"):
            async with redis_server(Path(folder)) as server:
                redis = RedisStore(server.url)
                await redis.open()
                await run(redis, 200)
                assert server.process is not None
                before = cpu_of(server.process.pid)
                cpu, wall = await run(redis, messages)
                server_cpu = (cpu_of(server.process.pid) - before) / messages
                rows.append(("redis", cpu, server_cpu, wall))
                await redis.close()

    base_cpu, base_wall = rows[0][1], rows[0][3]
    print(f"journal cost per message ({messages} messages; 4 store steps each)")
    header = ("CPU us", 10), ("store CPU us", 14), ("wall us", 10), ("CPU x", 8), ("wall x", 8)
    print(f"{'store':<28}" + "".join(f"{name:>{width}}" for name, width in header))
    for name, cpu, store_cpu, wall in rows:
        print(
            f"{name:<28}{cpu * 1e6:>10.0f}{store_cpu * 1e6:>14.0f}{wall * 1e6:>10.0f}"
            f"{(cpu + store_cpu) / base_cpu:>8.1f}{wall / base_wall:>8.1f}"
        )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
