"""The gateway with its Slack channel against the fake Slack, and runtimes for the tests."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from pydantic import SecretStr

from channels.slack.channel import SlackChannel
from channels.slack.mrkdwn import to_mrkdwn
from contract import Command
from gateway.events import MessageDelta, MessageEnd, RuntimeEvent, SessionUpdated
from gateway.runtimes import Runtime, RuntimeSession, Turn
from gateway.runtimes.base import UpdateListener
from gateway.runtimes.embedded import EmbeddedRuntime, EntityDefinition, HandlerContext, InboxWake
from slashgate.server import Running
from tests.slack.slack_fake import BOT_TOKEN, SIGNING_SECRET, FakeSlack, Message, SlackClient

ServerFactory = Callable[..., AbstractAsyncContextManager[Running]]


@dataclass
class Harness:
    fake: FakeSlack
    server: Running
    channel: SlackChannel
    slack: SlackClient


@asynccontextmanager
async def slack_gateway(
    gateway_server: ServerFactory, fake: FakeSlack, runtime: Runtime | None = None, **overrides: Any
) -> AsyncIterator[Harness]:
    """The gateway (webhook + Slack) on an ephemeral port, talking to ``fake``."""
    settings: dict[str, Any] = {
        "slack_bot_token": SecretStr(BOT_TOKEN),
        "slack_signing_secret": SecretStr(SIGNING_SECRET),
        "slack_api_base": fake.api_base,
        # Slack's limits x100: paced, but no test waits a second per message in a channel.
        "slack_rate_channel": 100.0,
        "slack_rate_update": 5000.0,
        **overrides,
    }
    async with gateway_server(runtime, **settings) as server, aiohttp.ClientSession() as session:
        channel = next(c for c in server.channels if isinstance(c, SlackChannel))
        yield Harness(fake, server, channel, SlackClient(session, server.url))


LEAD = re.compile(r"<@(U[A-Z0-9]+)> ran `([^`]*)`\n")


def lead(message: Message) -> str | None:
    """What a slash command's reply says was run (``/deploy prod``), if it says it."""
    match = LEAD.match(message.text)
    return match.group(2) if match else None


def shown(message: Message, markdown: str) -> bool:
    """``message`` shows ``markdown`` (after a slash command's lead line): as is when streamed
    (Slack renders Markdown), else as mrkdwn. Whether a short reply streams depends on
    timing, what it shows does not.
    """
    text = LEAD.sub("", message.text, count=1)
    return text == (markdown if message.streamed else to_mrkdwn(markdown))


# -- runtimes -------------------------------------------------------------------------------


class Recorder:
    """An embedded entity that records every composer_input and answers ``got: <source>``."""

    def __init__(self, commands: tuple[Command, ...] = ()) -> None:
        self.sources: list[str] = []
        self.received = asyncio.Event()

        async def handler(ctx: HandlerContext) -> None:
            if isinstance(ctx.wake, InboxWake):
                source = ctx.wake.message.payload["source"]
                self.sources.append(source)
                self.received.set()
                await ctx.reply(f"got: {source}")

        definition = EntityDefinition(type="recorder", handler=handler, slash_commands=commands)
        self.runtime = EmbeddedRuntime(definition)


Script = Callable[[Turn, "ScriptedSession"], AsyncIterator[RuntimeEvent]]


@dataclass
class ScriptedSession(RuntimeSession):
    script: Script
    answers: dict[str, asyncio.Future[str | None]] = field(default_factory=dict)

    async def run(self, turn: Turn) -> AsyncIterator[RuntimeEvent]:  # type: ignore[override]
        async for event in self.script(turn, self):
            yield event

    async def cancel(self) -> None:
        """The scripts here finish on their own."""

    def answer(self, request_id: str) -> asyncio.Future[str | None]:
        return self.answers.setdefault(request_id, asyncio.get_running_loop().create_future())

    async def answer_permission(self, request_id: str, option_id: str | None) -> bool:
        future = self.answer(request_id)
        if future.done():
            return False
        future.set_result(option_id)
        return True


class ScriptedRuntime(Runtime):
    """Every turn yields what ``script`` yields: the test controls deltas, permissions, ends."""

    name = "scripted"

    def __init__(self, script: Script, commands: tuple[Command, ...] = ()) -> None:
        self.script = script
        self.commands = commands
        self.sessions: list[ScriptedSession] = []

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        updates(SessionUpdated(commands=self.commands))
        session = ScriptedSession(self.script)
        self.sessions.append(session)
        return session

    async def static_commands(self) -> tuple[Command, ...]:
        return self.commands


@dataclass
class Held:
    """A script that records each turn's source, sets ``started`` and holds the turn until
    ``release`` is set; then it answers ``reply``.
    """

    reply: str = "done"
    sources: list[str] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        self.sources.append(turn.message.payload.source)
        self.started.set()
        await self.release.wait()
        yield MessageDelta(self.reply)
        yield MessageEnd()


def deltas(*parts: str) -> Script:
    """A script that streams ``parts`` and ends the turn."""

    async def script(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        for part in parts:
            yield MessageDelta(part)
        yield MessageEnd()

    return script
