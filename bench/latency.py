"""How fast replies show, 1, 20 and 200 conversations at once, on Telegram, Slack and Discord,
against fake platforms that enforce the published rate limits with 429 + Retry-After
(bench/limited.py). ``python bench/latency.py [--counts 1 20 200] [--turns 3]``.

Each conversation sends a one-line command (``/echo``, the embedded runtime's, answered at
once), waits until its reply shows on the platform, and sends the next at once, ``--turns``
times: a command sent as soon as the previous reply shows. All conversations start together;
each is a chat of its own (a private chat, a Slack channel, a Discord channel) with a user of
its own. The gateway, the fake and this client share one process and one event loop.

Printed per channel and count: p50 and p99 of the time from a command sent to its reply
shown (the fake's clock as the reply arrives); replies that said "busy" (delivery holding a
conversation: 0 is the goal; a one-line reply is delivered as it shows, so bench/streamed.py
is where delivery could cause one); 429s; platform calls per turn (the acknowledgement a platform
requires is not a call: Slack's and Discord's go back in the HTTP answer); and the bound the
limits impose: the same workload sent by an ideal sender that keeps the limits as
docs/rate-limits.md reads them (first come first served, no time spent anywhere but waiting
for the limits), its p99; the CPU each turn took in this process (the gateway's, the fake's
and the client's) plus the time the process waited, runnable, for a core (what the machine's
other work took from it: Linux's schedstat), and the p99 of the same workload served one turn
at a time on one core at that cost, with no limit; and the ratio of the measured p99 to the
larger of the two bounds. Where no limit is reached (Discord's interactions) that is the
bound, and counting the wait for a core keeps the ratio meaningful on a loaded machine.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from heapq import heappop, heappush
from pathlib import Path

import aiohttp
from pydantic import SecretStr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import channels.discord.channel  # noqa: E402, F401  (registers the channel)
from bench.chats import (  # noqa: E402
    slack_command,
    slack_settings,
    telegram_settings,
    telegram_update,
)
from bench.limited import LimitedDiscord, LimitedSlack, LimitedTelegram  # noqa: E402
from slashgate.server import running  # noqa: E402
from tests.conftest import make_settings  # noqa: E402
from tests.discord.interactions import PUBLIC_KEY, DiscordClient, command  # noqa: E402
from tests.telegram.helpers import message_update  # noqa: E402

REPLY_WAIT = 120.0  # seconds: a reply later than this means something is broken
# The calls that show or change a message (the limits count them), by channel.
COUNTED = {
    "telegram": ("sendMessage", "editMessageText", "sendMessageDraft"),
    "slack": ("chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream",
              "chat.stopStream", "response_url"),
    "discord": ("PATCH @original", "POST follow-up"),
}  # fmt: skip
# The limits as docs/rate-limits.md reads them: (calls a second, burst) per chat, per bot.
Limits = tuple[tuple[float, int] | None, tuple[float, int] | None]
LIMITS: dict[str, Limits] = {
    "telegram": ((1.0, 3), (30.0, 1)),
    "slack": ((1.0, 2), None),
    "discord": (None, None),  # an interaction's token takes one edit: no limit is reached
}


@dataclass
class Run:
    channel: str
    conversations: int
    turns: int
    seconds: list[float] = field(default_factory=list)
    busy: int = 0
    refused: int = 0
    calls: int = 0
    cpu: float = 0.0  # seconds of CPU of this process per turn (gateway, fake and client)
    queued: float = 0.0  # seconds per turn it waited for a core, runnable (the machine's load)

    def quantile(self, q: float) -> float:
        return quantile(self.seconds, q)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def ideal(conversations: int, turns: int, limits: Limits, service: float = 0.0) -> list[float]:
    """The latencies of an ideal sender under ``limits``: every reply as soon as they allow
    it, first come first served; each conversation's next command when its reply shows.
    ``service``: seconds of one core each turn takes (one process: one turn at a time).
    """
    per_chat, per_bot = limits
    chats = [0.0] * conversations  # when each chat's bucket is full again
    bot = 0.0
    core = 0.0  # when the process is free again
    line = [(0.0, i) for i in range(conversations)]
    done = [0] * conversations
    out: list[float] = []
    while line:
        asked, i = heappop(line)
        go = core = max(asked, core) + service
        if per_chat is not None:
            go = max(go, chats[i] - (per_chat[1] - 1) / per_chat[0])
            chats[i] = max(chats[i], go) + 1 / per_chat[0]
        if per_bot is not None:
            go = max(go, bot - (per_bot[1] - 1) / per_bot[0])
            bot = max(bot, go) + 1 / per_bot[0]
        out.append(go - asked)
        done[i] += 1
        if done[i] < turns:
            heappush(line, (go, i))
    return out


# -- one conversation's turns, per channel ---------------------------------------------------

Turn = Callable[[int, int], Awaitable[tuple[float, str]]]  # (conversation, turn) -> (s, text)


async def conversations(run: Run, turn: Turn) -> None:
    """The workload, after one turn in a conversation of its own that is not counted: the
    gateway's first turn pays for what it opens once (hikari learns a route's rate limit
    bucket from its first answer: until then the first edits of interactions that run at
    once share one bucket).
    """
    await turn(run.conversations, 0)

    async def one(i: int) -> None:
        for k in range(run.turns):
            seconds, text = await turn(i, k)
            run.seconds.append(seconds)
            run.busy += "busy" in text

    cpu, queued = scheduled()
    await asyncio.gather(*(one(i) for i in range(run.conversations)))
    turns = run.conversations * run.turns
    cpu_after, queued_after = scheduled()
    run.cpu, run.queued = (cpu_after - cpu) / turns, (queued_after - queued) / turns


def scheduled() -> tuple[float, float]:
    """Seconds this process's main thread ran, and waited runnable for a core (Linux's
    schedstat; without it, the CPU time and no wait).
    """
    try:
        ran, waited, _ = Path("/proc/self/schedstat").read_text().split()
    except (OSError, ValueError):
        return time.process_time(), 0.0
    return int(ran) / 1e9, int(waited) / 1e9


async def telegram(run: Run) -> None:
    fake = LimitedTelegram()
    url = await fake.start()
    try:
        settings = telegram_settings(url)
        async with running(settings, None) as server, aiohttp.ClientSession() as http:

            async def turn(i: int, k: int) -> tuple[float, str]:
                chat = 10_000 + i
                reply = fake.expect(str(chat))
                update = message_update(chat, f"/echo hi {k}", user_id=chat)
                start = await telegram_update(http, server.url, update)
                text = await asyncio.wait_for(reply, REPLY_WAIT)
                return fake.shown_at[str(chat)] - start, text

            await conversations(run, turn)
    finally:
        await fake.stop()
    run.refused = fake.refused
    run.calls = sum(fake.calls[m] for m in COUNTED["telegram"]) - 1  # the warm-up's


async def slack(run: Run) -> None:
    fake = LimitedSlack()
    await fake.start()
    try:
        settings = slack_settings(fake.api)
        async with running(settings, None) as server, aiohttp.ClientSession() as http:

            async def turn(i: int, k: int) -> tuple[float, str]:
                channel = f"C{i:05d}"
                reply = fake.expect(channel)
                back = fake.response_url_for(channel)
                start = await slack_command(http, server.url, f"echo hi {k}", channel,
                                            f"U{i:05d}", back)  # fmt: skip
                text = await asyncio.wait_for(reply, REPLY_WAIT)
                return fake.shown_at[channel] - start, text

            await conversations(run, turn)
    finally:
        await fake.stop()
    run.refused = fake.refused
    run.calls = sum(fake.calls[m] for m in COUNTED["slack"]) - 1


async def discord(run: Run) -> None:
    fake = LimitedDiscord()
    await fake.start()
    settings = make_settings(
        discord_token=SecretStr("discord-bench-token"),
        discord_public_key=PUBLIC_KEY,
        discord_api_base=fake.url,
        discord_sync_commands=False,
    )
    try:
        async with running(settings, None) as server, aiohttp.ClientSession() as http:
            client = DiscordClient(http, server.url)

            async def turn(i: int, k: int) -> tuple[float, str]:
                payload = command("echo", ("arguments", 3, f"hi {k}"),
                                  channel=str(600_000 + i), user_id=str(900_000 + i))  # fmt: skip
                reply = fake.expect(payload["token"])
                start = time.monotonic()
                await client.post(payload)  # answered with the deferred response: the ack
                text = await asyncio.wait_for(reply, REPLY_WAIT)
                return fake.shown_at[payload["token"]] - start, text

            await conversations(run, turn)
    finally:
        await fake.stop()
    run.refused = fake.refused
    run.calls = sum(fake.calls[m] for m in COUNTED["discord"]) - 1


RUNS = {"telegram": telegram, "slack": slack, "discord": discord}


# -- the table ----------------------------------------------------------------------------


def row(run: Run) -> str:
    """The run's line: the bound is the larger of the limits' (no CPU) and the CPU's (no
    limits), each a p99 no sender could beat on this machine.
    """
    limits = quantile(ideal(run.conversations, run.turns, LIMITS[run.channel]), 0.99)
    service = run.cpu + run.queued
    cpu = quantile(ideal(run.conversations, run.turns, (None, None), service), 0.99)
    bound = max(limits, cpu)
    turns = run.conversations * run.turns
    p50, p99 = run.quantile(0.5), run.quantile(0.99)
    return (
        f"| {run.channel} | {run.conversations} | {turns} | {p50 * 1000:.0f} ms "
        f"| {p99 * 1000:.0f} ms | {limits * 1000:.0f} ms "
        f"| {run.cpu * 1000:.2f} + {run.queued * 1000:.2f} ms "
        f"| {cpu * 1000:.0f} ms | {p99 / bound:.2f}x | {run.busy} | {run.refused} "
        f"| {run.calls / turns:.2f} |"
    )


HEADER = (
    "| channel | conversations | turns | p50 | p99 | limits' bound p99 "
    "| CPU + wait for a core, per turn | CPU's bound p99 | p99 / bound | busy | 429s "
    "| calls per turn |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 20, 200])
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--channels", nargs="+", default=list(RUNS), choices=list(RUNS))
    args = parser.parse_args()
    logging.getLogger("slashgate").setLevel(logging.ERROR)  # not a line per turn
    logging.getLogger("hikari").setLevel(logging.ERROR)
    load = os.getloadavg()
    started = time.monotonic()
    print(f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}, nice {os.nice(0)}")
    print(HEADER)
    for name in args.channels:
        for count in args.counts:
            run = Run(name, count, args.turns)
            await RUNS[name](run)
            print(row(run), flush=True)
    load = os.getloadavg()
    print(
        f"{time.monotonic() - started:.0f} s; load average after "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
