"""Memory per idle conversation: ``python bench/memory.py N`` prints the RSS growth per
conversation, in bytes, after N conversations each answered one ``/echo`` and went idle.
``python bench/memory.py N K``: each of them remembered K commands of its own first
(``/remember``; the embedded runtime keeps at most 50), the costliest kind of conversation.
On the memory store, which holds the remembered commands in the process too;
``python bench/memory.py N K sqlite``: on a new SQLite file (the default store), which holds
them on disk.

In a process of its own, so that nothing else the bench did is in its RSS.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.core import Gateway  # noqa: E402
from gateway.inbound import InboundMessage  # noqa: E402
from slashgate.config import Settings  # noqa: E402
from slashgate.registry import build_runtime  # noqa: E402

WARM = 1000  # conversations before the first reading: imports and caches are not per conversation


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def converse(gateway: Gateway, first: int, count: int, commands: int = 0) -> None:
    for n in range(first, first + count):
        for k in range(commands):
            text = f"/remember note{k} remembered text number {k}"
            await gateway.handle(InboundMessage("webhook", f"conversation-{n}", "user", text))
        message = InboundMessage("webhook", f"conversation-{n}", "user", "/echo hello")
        outcome = await gateway.handle(message)
        assert outcome.reply is not None and outcome.reply.text == "hello", outcome


async def main(count: int, commands: int, store: str) -> None:
    with tempfile.TemporaryDirectory(prefix="slashgate-memory-") as folder:
        settings = Settings(
            max_sessions=count + WARM,
            log_level="WARNING",
            store=store,
            state_path=Path(folder) / "state.sqlite3",
            memory_store_size=(count + WARM) * 2,
        )
        gateway = Gateway(settings, build_runtime(settings))
        await gateway.start()
        await converse(gateway, 0, WARM)
        gc.collect()
        before = rss()
        await converse(gateway, WARM, count, commands)
        gc.collect()
        print((rss() - before) / count)
        await gateway.stop()


if __name__ == "__main__":
    count, commands, store = int(sys.argv[1]), 0, "memory"
    if len(sys.argv) > 2:
        commands = int(sys.argv[2])
    if len(sys.argv) > 3:
        store = sys.argv[3]
    asyncio.run(main(count, commands, store))
