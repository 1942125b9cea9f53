"""The gateway with its Discord channel against the fake Discord."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
from pydantic import SecretStr

from channels.discord.channel import DiscordChannel
from gateway.runtimes import Runtime
from slashgate.server import Running

from .fake import BOT_TOKEN, FakeDiscord, Message
from .interactions import PUBLIC_KEY, DiscordClient

ServerFactory = Callable[..., AbstractAsyncContextManager[Running]]
DEFERRED = 5  # the response type of a deferred message
WAIT = 5.0  # seconds any awaited step may take before a test fails


@dataclass
class Harness:
    fake: FakeDiscord
    server: Running
    channel: DiscordChannel
    discord: DiscordClient

    async def interact(self, payload: dict[str, Any]) -> tuple[int, Any]:
        """Post a signed interaction, and show its deferred response in the fake, as Discord
        shows the "thinking" message (ephemeral when the flags say so).
        """
        status, body = await self.discord.post(payload)
        if status == 200 and body.get("type") == DEFERRED:
            flags = (body.get("data") or {}).get("flags") or 0
            self.fake.originals.setdefault(payload["token"], Message(0, "", flags))
        return status, body

    async def follow_up(self, token: str) -> Message:
        """The first follow-up of an interaction, once it is posted."""
        await asyncio.wait_for(self.fake.followed.wait(), WAIT)
        return self.fake.follow_ups[token][0]

    async def replies(self, token: str) -> list[Message]:
        """The interaction's replies, once its input is done."""
        await self.channel.inputs.drain(WAIT)
        return self.fake.replies(token)


@asynccontextmanager
async def discord_gateway(
    gateway_server: ServerFactory,
    fake: FakeDiscord,
    runtime: Runtime | None = None,
    **overrides: Any,
) -> AsyncIterator[Harness]:
    """The gateway (webhook + Discord) on an ephemeral port, talking to ``fake``."""
    settings: dict[str, Any] = {
        "discord_token": SecretStr(BOT_TOKEN),
        "discord_public_key": PUBLIC_KEY,
        "discord_api_base": fake.api_base,
        "discord_edit_interval": 0.05,
        **overrides,
    }
    async with gateway_server(runtime, **settings) as server, aiohttp.ClientSession() as session:
        channel = next(c for c in server.channels if isinstance(c, DiscordChannel))
        yield Harness(fake, server, channel, DiscordClient(session, server.url))
