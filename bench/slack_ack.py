"""Slash-command ack latency: the Slack channel beside slack-bolt's default ack path.

Both run in this process on 127.0.0.1, against the fake Slack Web API of the tests:

- slashgate: the gateway's Slack channel (``/slack/events`` on the gateway's server); its
  bolt app runs with ``process_before_response`` and the listener acks, schedules the work
  and returns;
- bolt default: an ``AsyncApp`` as bolt's documentation writes it, ``await ack()`` then the
  same gateway work in the listener, served by bolt's own aiohttp adapter. Bolt runs such a
  listener as a task and polls every 10 ms for the ack.

Requests alternate between the two so that both see the same conditions. Run:
``.venv/bin/python bench/slack_ack.py [requests]``.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from pydantic import SecretStr
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from channels.slack import SlackChannel  # noqa: E402
from channels.slack.web import web_client  # noqa: E402
from gateway.config import Settings  # noqa: E402
from gateway.core import Gateway  # noqa: E402
from gateway.inbound import InboundMessage  # noqa: E402
from gateway.server import running  # noqa: E402
from tests.slack.slack_fake import (  # noqa: E402
    BOT_TOKEN,
    BOT_USER,
    SIGNING_SECRET,
    TEAM,
    FakeSlack,
    command_body,
    signed_headers,
)

WARMUP = 30
CHANNELS = 16  # spread over conversations, as real traffic is


def default_bolt_app(fake: FakeSlack, gateway: Gateway) -> web.Application:
    """slack-bolt's default path: ack() in the listener, the work after it."""

    async def authorize() -> AuthorizeResult:
        return AuthorizeResult(
            enterprise_id=None, team_id=TEAM, bot_user_id=BOT_USER, bot_token=BOT_TOKEN
        )

    app = AsyncApp(
        name="bolt-default",
        signing_secret=SIGNING_SECRET,
        client=web_client(fake.api_base, None),
        authorize=authorize,
    )

    @app.command(re.compile(".*"))
    async def on_command(ack: Any, command: dict[str, Any]) -> None:
        await ack()
        message = InboundMessage(
            channel="bolt",
            conversation=command["channel_id"],
            user=command["user_id"],
            text="/" + command["text"],
        )
        await gateway.handle(message)

    async def events(request: web.Request) -> web.Response:
        return await to_aiohttp_response(await app.async_dispatch(await to_bolt_request(request)))

    server = web.Application()
    server.router.add_post("/slack/events", events)
    return server


async def ack_ms(session: aiohttp.ClientSession, url: str, n: int, response_url: str) -> float:
    body = command_body("/agent", "echo hi", channel=f"C{n % CHANNELS}", response_url=response_url)
    headers = signed_headers(body, "application/x-www-form-urlencoded")
    start = time.perf_counter()
    async with session.post(url, data=body, headers=headers) as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"{url} answered {response.status}")
    return (time.perf_counter() - start) * 1000


def summary(name: str, samples: list[float]) -> str:
    p90 = statistics.quantiles(samples, n=10)[-1]
    return f"  {name:<24} median {statistics.median(samples):7.2f} ms   p90 {p90:7.2f} ms"


async def main(requests: int) -> None:
    fake = FakeSlack()
    await fake.start()
    settings = Settings(
        host="127.0.0.1",
        port=0,
        slack_bot_token=SecretStr(BOT_TOKEN),
        slack_signing_secret=SecretStr(SIGNING_SECRET),
        slack_api_base=fake.api_base,
        inventory_wait=2.0,
    )
    async with running(settings) as server, aiohttp.ClientSession() as session:
        runner = web.AppRunner(default_bolt_app(fake, server.gateway), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        urls = {
            "slashgate Slack channel": server.url + "/slack/events",
            "slack-bolt default ack": f"http://127.0.0.1:{port}/slack/events",
        }
        samples: dict[str, list[float]] = {name: [] for name in urls}
        for n in range(WARMUP + requests):
            for name, url in urls.items():
                ms = await ack_ms(session, url, n, fake.response_url("bench"))
                if n >= WARMUP:
                    samples[name].append(ms)
        for channel in server.channels:
            if isinstance(channel, SlackChannel):
                await channel.drain(60.0)  # let the scheduled work finish before shutting down
        await runner.cleanup()
    await fake.stop()

    ours, bolt = samples.values()
    print(f"slash-command ack latency, {requests} requests each (127.0.0.1, one process)")
    for name, values in samples.items():
        print(summary(name, values))
    ratio = statistics.median(bolt) / statistics.median(ours)
    print(f"  ratio (bolt default / slashgate, medians): {ratio:.1f}x")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
