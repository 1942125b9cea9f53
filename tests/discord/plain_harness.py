"""The gateway with Discord's Gateway connection on (``discord_gateway``), hikari's
GatewayBot connected to the fake Gateway, replies going to the fake REST API; and plain
messages as Discord dispatches them (MESSAGE_CREATE).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr

from channels.discord.plain import Said
from gateway.runtimes import Runtime

from .fake import BOT_USER, FakeDiscord, Message, fake_discord, message_json
from .fake_gateway import FakeGateway, fake_gateway
from .harness import WAIT, Harness, ServerFactory, discord_gateway
from .interactions import GUILD, USER, user

DM = "600"  # the channel of the user's direct messages with the bot
ROOM = "601"  # a guild channel
# A bot token's first part is the bot's id in base64; hikari's GatewayBot reads it.
TOKEN = base64.b64encode(BOT_USER["id"].encode()).decode().rstrip("=") + ".fake.gateway-token"
_ids = itertools.count(700_000_000)


def message_create(
    content: str,
    *,
    channel: str = DM,
    guild: str | None = None,
    author: dict[str, Any] | None = None,
    mentions: tuple[dict[str, Any], ...] = (),
    attachments: tuple[dict[str, Any], ...] = (),
    message_id: str | None = None,
) -> dict[str, Any]:
    """A MESSAGE_CREATE's data: a direct message, or in ``guild`` when given."""
    data = message_json(
        message_id or str(next(_ids)),
        channel,
        author or user(USER),
        content,
        mentions=list(mentions),
        attachments=list(attachments),
    )
    if guild is not None:
        data["guild_id"] = guild
    return data


def mentioning(text: str, **extra: Any) -> dict[str, Any]:
    """A message in a guild channel that starts with the bot's mention."""
    return message_create(
        f"<@{BOT_USER['id']}> {text}", channel=ROOM, guild=GUILD, mentions=(BOT_USER,), **extra
    )


@dataclass
class PlainHarness:
    h: Harness
    socket: FakeGateway
    # By message id, each time the channel took it in: True when it ran, False for a replay.
    taken: dict[str, list[bool]] = field(default_factory=dict)
    _news: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def send(self, data: dict[str, Any]) -> None:
        await self.socket.dispatch("MESSAGE_CREATE", data)

    async def was_taken(self, message_id: str, nth: int = 1) -> bool:
        """Once the channel took the message in the ``nth`` time: whether it ran then."""
        async with self._news:
            await asyncio.wait_for(
                self._news.wait_for(lambda: len(self.taken.get(message_id, ())) >= nth), WAIT
            )
        return self.taken[message_id][nth - 1]

    async def say(self, data: dict[str, Any]) -> list[Message]:
        """Send a message for the bot; the messages of its channel once it is answered."""
        await self.send(data)
        return await self.answered(data)

    async def answered(self, data: dict[str, Any]) -> list[Message]:
        """The messages of its channel once a message sent is answered."""
        assert await self.was_taken(data["id"])
        await self.h.channel.inputs.drain(WAIT)
        return self.h.fake.posted[data["channel_id"]]


@asynccontextmanager
async def plain_gateway(
    gateway_server: ServerFactory,
    runtime: Runtime | None = None,
    fake: FakeDiscord | None = None,
    **overrides: Any,
) -> AsyncIterator[PlainHarness]:
    """The gateway with a live Gateway session, and every message it took in recorded;
    against ``fake`` when given (it outlives the gateway: a restart), else a fake of its own.
    """
    async with AsyncExitStack() as stack:
        if fake is None:
            fake = await stack.enter_async_context(fake_discord())
        socket = await stack.enter_async_context(fake_gateway())
        fake.gateway_url = socket.url
        async with discord_gateway(
            gateway_server,
            fake,
            runtime,
            discord_gateway=True,
            discord_token=SecretStr(TOKEN),
            **overrides,
        ) as h:
            harness = PlainHarness(h, socket)
            accept = h.channel.plain.accept

            async def recorded(said: Said) -> bool:
                ran = await accept(said)
                async with harness._news:
                    harness.taken.setdefault(said.message_id, []).append(ran)
                    harness._news.notify_all()
                return ran

            h.channel.plain.accept = recorded  # type: ignore[method-assign]
            await asyncio.wait_for(socket.connected(), WAIT)
            yield harness
