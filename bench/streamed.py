"""Streamed replies while a shared budget is spent, and the busy answers delivery causes:
issue 33's cases, against the fake platforms that enforce the published limits
(bench/limited.py). ``python bench/streamed.py``; under a minute.

- **Busy from delivery, before and after, on Slack.** Four channels stream replies (a line
  every 100 ms each: far more chat.update calls than the workspace's 50 a minute). In four
  other channels a user sends ``/agent ask`` three times, the next as soon as the previous
  reply's text shows and the agent's turn is over. The agent (a scripted runtime) writes
  its answer, and once that shows reports its usage and ends: the usage line is one more
  chat.update under the spent budget. Counted: answers that said "busy", none of them from a
  turn still running. "Before" is the same run with the conversation's run slot let go of
  only when the reply is delivered, as before issue 33 (``held_through_delivery``: this
  bench alone replaces the core's ``_free`` for that run).
- **Slack ``/agent slow 3``** (the embedded demo runtime: a line a second, then "done") in a
  channel while eight others run ``/agent slow 9``: when each line showed, and "done".
- **Telegram ``/slow 4`` in a group** (20 messages a minute, bursts of 3): when each line
  showed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
import unittest.mock
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from pathlib import Path

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gateway.run  # noqa: E402
from bench import chats  # noqa: E402
from bench.limited import LimitedSlack, LimitedTelegram  # noqa: E402
from contract import Command  # noqa: E402
from gateway.conversation import Conversation  # noqa: E402
from gateway.events import MessageDelta, MessageEnd, RuntimeEvent, UsageReported  # noqa: E402
from gateway.runtimes import Runtime, Turn  # noqa: E402
from slashgate.server import running  # noqa: E402
from tests.slack.slack_harness import ScriptedRuntime, ScriptedSession  # noqa: E402
from tests.telegram.helpers import GROUP, message_update  # noqa: E402

WAIT = 30.0  # seconds: a reply later than this means something is broken
CHATTY, ASKING, ASKS = 4, 4, 3
USAGE = UsageReported(input_tokens=10, output_tokens=2)
Post = Callable[[str, str], Awaitable[float]]


class Shows:
    """What each chat's messages showed, and when (the fake's clock); "busy" answers."""

    def __init__(self) -> None:
        self.said: defaultdict[str, list[tuple[float, str]]] = defaultdict(list)
        self.busy = 0
        self._news = asyncio.Event()  # set, and replaced, at each message shown

    def show(self, chat: str, text: str) -> None:
        self.said[chat].append((time.monotonic(), text))
        self.busy += "busy" in text
        self._news.set()
        self._news = asyncio.Event()

    async def until(self, done: Callable[[], object]) -> None:
        async with asyncio.timeout(WAIT):
            while not done():
                await self._news.wait()

    def first(self, chat: str, text: str) -> float | None:
        """When a message of ``chat`` first showed ``text``."""
        return next((at for at, said in self.said[chat] if text in said), None)

    async def shown(self, chat: str, text: str) -> float:
        await self.until(lambda: self.first(chat, text))
        return self.first(chat, text) or 0.0


class ShowingSlack(LimitedSlack):
    def __init__(self) -> None:
        super().__init__()
        self.shows = Shows()

    async def method(self, request: web.Request) -> web.Response:
        response = await super().method(request)
        if response.status == 200 and request.match_info["method"] == "chat.update":
            params = (
                await request.json()
                if request.content_type == "application/json"
                else dict(await request.post())
            )
            self.shows.show(str(params.get("channel", "")), str(params.get("text", "")))
        return response

    def replied(self, chat: str, text: str) -> None:  # a post, or through a response_url
        super().replied(chat, text)
        self.shows.show(chat, text)


class ShowingTelegram(LimitedTelegram):
    def __init__(self) -> None:
        super().__init__()
        self.shows = Shows()

    def replied(self, chat: str, text: str) -> None:  # a message sent or edited
        super().replied(chat, text)
        self.shows.show(chat, text)


@asynccontextmanager
async def slack(runtime: Runtime | None) -> AsyncIterator[tuple[ShowingSlack, Post]]:
    """The gateway on ``runtime`` (None: the embedded demo) with the fake Slack; ``post``
    sends ``/agent TEXT`` in a channel from a user of its own, and says when.
    """
    fake = ShowingSlack()
    await fake.start()
    try:
        settings = chats.slack_settings(fake.api)
        async with running(settings, runtime) as server, aiohttp.ClientSession() as http:

            async def post(channel: str, text: str) -> float:
                back = fake.response_url_for(channel)
                return await chats.slack_command(
                    http, server.url, text, channel, f"U{channel}", back
                )

            yield fake, post
    finally:
        await fake.stop()


@contextmanager
def held_through_delivery() -> Iterator[None]:
    """The run slot as it was before issue 33: let go of once the reply is delivered."""

    def held(conv: Conversation) -> asyncio.Future[None]:
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        mine.add_done_callback(lambda _: conv.release())
        return mine

    with unittest.mock.patch.object(gateway.run, "_free", held):
        yield


class Agent:
    """``/chat`` streams a line every 100 ms until ``stop``; ``/ask N`` writes ``answer N``,
    and once that shows reports its usage and ends (``ended``, by channel).
    """

    def __init__(self) -> None:
        self.shows = Shows()
        self.stop = asyncio.Event()
        self.ended: dict[str, asyncio.Event] = {}
        self.runtime = ScriptedRuntime(self.run, (Command(name="chat"), Command(name="ask")))

    async def run(self, turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        if turn.command == "chat":
            while not self.stop.is_set():
                yield MessageDelta("another line\n")
                await asyncio.sleep(0.1)
        else:
            channel, answer = turn.user.removeprefix("U"), f"answer {turn.args}"
            yield MessageDelta(answer)
            await self.shows.shown(channel, answer)
            yield USAGE
            self.ended[channel].set()
        yield MessageEnd()


async def busy_from_delivery(hold: bool) -> tuple[int, int, list[float]]:
    """(busy answers, commands, seconds from each command to its answer's text shown)."""
    agent = Agent()
    seconds: list[float] = []
    with held_through_delivery() if hold else nullcontext():
        async with slack(agent.runtime) as (fake, post):
            shows = agent.shows = fake.shows
            for i in range(CHATTY):
                await post(f"CHAT{i}", "chat")
            await shows.until(lambda: fake.calls["chat.update"] >= 10)  # the burst spent

            async def asks(channel: str) -> None:
                for k in range(ASKS):
                    ended = agent.ended[channel] = asyncio.Event()
                    busy = shows.busy
                    sent = await post(channel, f"ask {k}")
                    await shows.until(
                        lambda k=k, busy=busy: (
                            shows.busy > busy or shows.first(channel, f"answer {k}")
                        )
                    )
                    if shows.busy == busy:  # it ran: the next once its turn is over
                        seconds.append(await shows.shown(channel, f"answer {k}") - sent)
                        await asyncio.wait_for(ended.wait(), WAIT)

            await asyncio.gather(*(asks(f"ASK{i}") for i in range(ASKING)))
            agent.stop.set()
    return shows.busy, ASKING * ASKS, seconds


async def lines_shown(shows: Shows, chat: str, sent: float, lines: list[str]) -> list[float]:
    """Seconds from ``sent`` to each of ``lines`` first shown in ``chat``."""
    return [await shows.shown(chat, line) - sent for line in lines]


async def slack_slow() -> list[float]:
    """``/agent slow 3`` beside eight channels streaming ``/agent slow 9``."""
    async with slack(None) as (fake, post):
        for i in range(8):
            await post(f"CHAT{i}", "slow 9")
        await asyncio.sleep(2.5)  # their first lines posted, the update burst spent
        sent = await post("SLOW", "slow 3")
        return await lines_shown(fake.shows, "SLOW", sent, ["1/3", "2/3", "3/3", "done"])


async def telegram_group_slow() -> list[float]:
    """``/slow 4`` in a Telegram group."""
    fake = ShowingTelegram()
    url = await fake.start()
    try:
        settings = chats.telegram_settings(url)
        async with running(settings, None) as server, aiohttp.ClientSession() as http:
            sent = await chats.telegram_update(http, server.url, message_update(GROUP, "/slow 4"))
            lines = ["1/4", "2/4", "3/4", "4/4", "done"]
            return await lines_shown(fake.shows, str(GROUP), sent, lines)
    finally:
        await fake.stop()


def ms(values: list[float]) -> str:
    return ", ".join(f"{v:.2f} s" for v in values)


async def main() -> None:
    logging.getLogger("slashgate").setLevel(logging.ERROR)
    load = os.getloadavg()
    started = time.monotonic()
    print(f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}, nice {os.nice(0)}")
    print("| Slack, /agent ask | commands | busy answers | command to its text shown, p50 / max |")
    print("|---|---|---|---|")
    for hold, name in ((True, "before: the slot held through delivery"), (False, "after")):
        busy, sent, seconds = await busy_from_delivery(hold)
        spread = f"{quantile(seconds, 0.5):.2f} / {max(seconds, default=0):.2f} s"
        print(f"| {name} | {sent} | {busy} | {spread} |", flush=True)
    print(f"Slack /agent slow 3 beside 8 streaming channels: 1/3, 2/3, 3/3, done shown at "
          f"{ms(await slack_slow())} after the command")  # fmt: skip
    print(f"Telegram group /slow 4: 1/4, 2/4, 3/4, 4/4, done shown at "
          f"{ms(await telegram_group_slow())} after the command")  # fmt: skip
    load = os.getloadavg()
    print(f"{time.monotonic() - started:.0f} s; load average after "
          f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")  # fmt: skip


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


if __name__ == "__main__":
    asyncio.run(main())
