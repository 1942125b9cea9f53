"""Through hikari against the fake Discord: a conversation whose reply shows is free for the
next command, while other conversations spend the bot's global limit; what is left of the
reply (its usage line) goes on behind it (issue 33: "busy" only from a turn still running).

Each interaction has a webhook bucket of its own and Discord leaves interactions out of the
global limit, so no other conversation can spend what an interaction's reply needs. What
they can spend is the bot's global limit, with plain messages' replies in their channels;
past it Discord answers 429 "global", and hikari then holds every request whose bucket it
knows, an interaction's edit included, until the Retry-After has passed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

from contract import Command
from gateway.events import MessageDelta, MessageEnd, RuntimeEvent, UsageReported
from gateway.runtimes import Turn
from tests.slack.slack_harness import ScriptedRuntime, ScriptedSession

from .fake import BOT_USER, FakeDiscord, Message, fake_discord
from .harness import WAIT, ServerFactory
from .interactions import GUILD, command
from .limited import LimitedDiscord
from .plain_harness import PlainHarness, message_create, plain_gateway

COMMANDS = (Command(name="chat", description="Stream"), Command(name="go", description="Go"))
CHATTY = ("602", "603")  # guild channels streaming replies: more edits than the limit has
HERE = "601"  # the guild channel of the conversation that sends one command after another
USAGE = UsageReported(input_tokens=10, output_tokens=2)


class Turns:
    """``/chat`` streams until ``stop``; ``/go`` writes ``done N`` and ends, with its usage,
    once the test lets it (``end``): when its text shows, as a user would see it.
    """

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.end: asyncio.Queue[None] = asyncio.Queue()
        self.ran = 0  # /go turns that ran

    async def run(self, turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        if turn.message.payload.source.startswith("/chat"):
            while not self.stop.is_set():
                yield MessageDelta("more ")
                await asyncio.sleep(0.02)  # the agent's own pace
        else:
            self.ran += 1
            yield MessageDelta(f"done {self.ran - 1}")
            await self.end.get()
            yield USAGE  # the usage line: a last edit, after the text shows
        yield MessageEnd()


def mention(text: str, channel: str) -> dict[str, object]:
    return message_create(
        f"<@{BOT_USER['id']}> {text}", channel=channel, guild=GUILD, mentions=(BOT_USER,)
    )


Send = Callable[[PlainHarness, int], Awaitable[object]]  # the test's i-th command or message
Shown = Callable[[LimitedDiscord, int], bool]  # whether the i-th reply's text shows


async def two_in_a_row(gateway_server: ServerFactory, send: Send, shown: Shown) -> LimitedDiscord:
    """Two commands in ``HERE``, each sent as soon as the previous reply's text shows (or
    "busy" does), while the other conversations stream until the limit refuses calls.
    """
    turns = Turns()
    fake = LimitedDiscord(rate=10.0)  # Discord's 50 a second, scaled to two streaming channels
    runtime = ScriptedRuntime(turns.run, COMMANDS)
    async with fake_discord(fake), plain_gateway(gateway_server, runtime, fake) as p:
        try:
            for channel in CHATTY:
                await p.send(mention("/chat", channel))
            await fake.wait(lambda: fake.refused > 0)
            for i in range(2):
                await send(p, i)
                await fake.wait(lambda i=i: shown(fake, i) or bool(busy(fake)))
                turns.end.put_nowait(None)
        finally:
            turns.stop.set()
        await p.h.channel.inputs.drain(WAIT)
    assert busy(fake) == [], "no input found the conversation busy"
    assert turns.ran == 2
    return fake


def busy(fake: FakeDiscord) -> list[str]:
    """What the bot said that says "busy", anywhere."""
    said = [m.content for m in fake.originals.values()]
    said += [m.content for thread in (*fake.follow_ups.values(), *fake.posted.values())
             for m in thread]  # fmt: skip
    return [text for text in said if "busy" in text]


def texts(messages: list[Message]) -> list[str]:
    return [m.content.partition("\n")[0] for m in messages]


async def test_the_next_command_after_a_visible_reply_runs_while_the_limit_is_spent(
    gateway_server: ServerFactory,
) -> None:
    payloads = [command("go", channel=HERE) for _ in range(2)]

    async def interact(p: PlainHarness, i: int) -> object:
        return await p.h.interact(payloads[i])

    def shown(fake: LimitedDiscord, i: int) -> bool:
        return texts(fake.replies(payloads[i]["token"])) == [f"done {i}"]

    fake = await two_in_a_row(gateway_server, interact, shown)
    replies = [fake.replies(payload["token"]) for payload in payloads]
    assert [texts(r) for r in replies] == [["done 0"], ["done 1"]]
    assert all(r[0].content.endswith("_12 tokens (10 in, 2 out)_") for r in replies)


async def test_the_next_message_after_a_visible_reply_runs_while_the_limit_is_spent(
    gateway_server: ServerFactory,
) -> None:
    async def say(p: PlainHarness, i: int) -> object:
        return await p.send(mention("/go", HERE))

    def shown(fake: LimitedDiscord, i: int) -> bool:
        return texts(fake.posted[HERE])[i : i + 1] == [f"done {i}"]

    fake = await two_in_a_row(gateway_server, say, shown)
    assert texts(fake.posted[HERE]) == ["done 0", "done 1"]
    assert all(m.content.endswith("_12 tokens (10 in, 2 out)_") for m in fake.posted[HERE])
