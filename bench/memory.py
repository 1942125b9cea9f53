"""Memory per idle conversation: ``python bench/memory.py N`` prints the RSS growth per
conversation, in bytes, after N conversations each answered one ``/echo`` and went idle.

In a process of its own, so that nothing else the bench did is in its RSS.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.core import Gateway  # noqa: E402
from gateway.inbound import InboundMessage  # noqa: E402
from gateway.runtimes import build_runtime  # noqa: E402
from slashgate.config import Settings  # noqa: E402

WARM = 1000  # conversations before the first reading: imports and caches are not per conversation


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def converse(gateway: Gateway, first: int, count: int) -> None:
    for n in range(first, first + count):
        message = InboundMessage("webhook", f"conversation-{n}", "user", "/echo hello")
        outcome = await gateway.handle(message)
        assert outcome.reply is not None and outcome.reply.text == "hello", outcome


async def main(count: int) -> None:
    # The memory store: what an idle conversation costs in the process itself.
    settings = Settings(max_sessions=count + WARM, log_level="WARNING", store="memory")
    gateway = Gateway(settings, build_runtime(settings))
    await gateway.start()
    await converse(gateway, 0, WARM)
    gc.collect()
    before = rss()
    await converse(gateway, WARM, count)
    gc.collect()
    print((rss() - before) / count)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
