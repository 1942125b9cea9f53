"""Outbound pacing at Telegram's own rates: many conversations streaming at once through the
Telegram channel, against the fake Bot API enforcing Telegram's limits with 429s (30 a second
per bot, one a second per private chat in bursts of 3, 20 a minute per group), with the
gateway's pacing on and, as the baseline in the same run, off.
``python bench/pacing.py [conversations] [groups] [seconds each turn streams]``.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import channels.telegram.channel  # noqa: E402, F401  (registers the channel)
from gateway.runtimes import Runtime  # noqa: E402
from slashgate.server import Running, running  # noqa: E402
from tests.conftest import make_settings  # noqa: E402
from tests.pacing.crowd import crowd  # noqa: E402
from tests.telegram.fake_bot_api import FakeBotAPI  # noqa: E402
from tests.telegram.helpers import starter  # noqa: E402


@asynccontextmanager
async def gateway(runtime: Runtime | None = None, **overrides: Any) -> AsyncIterator[Running]:
    async with running(make_settings(**overrides), runtime) as server:
        yield server


async def one(conversations: int, groups: int, seconds: float, paced: bool) -> str:
    async with FakeBotAPI() as fake:
        figures = await crowd(
            starter(gateway, fake), fake, conversations=conversations, groups=groups,
            scale=1.0, stream_for=seconds, pieces=int(seconds * 4), paced=paced,
        )  # fmt: skip
    return ("paced:   " if paced else "unpaced: ") + figures.line()


async def main() -> None:
    logging.getLogger("slashgate").setLevel(logging.ERROR)  # not a line per 429 waited out
    args = [float(a) for a in sys.argv[1:]]
    conversations, groups, seconds = (args + [200, 40, 10][len(args) :])[:3]
    print(f"Telegram's rates; each turn streams for {seconds:g} s, 4 deltas a second")
    for paced in (True, False):
        print(await one(int(conversations), int(groups), seconds, paced), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
