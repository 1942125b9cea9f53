"""Replies in Discord: streamed by editing the deferred response, then cut at 2,000
characters with code blocks reopened and follow-ups for the rest; usage shown at the end.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from contract import Command
from gateway.events import MessageDelta, MessageEnd, RuntimeEvent, UsageReported
from gateway.runtimes import Turn
from tests.slack.slack_harness import Script, ScriptedRuntime, ScriptedSession, deltas

from .fake import LIMIT, Message, fake_discord
from .harness import discord_gateway
from .interactions import command

DEPLOY = (Command(name="deploy"),)
# Prose, then a code block that spans several messages, then a last line.
LONG = "{}\n\n```python\n{}\n```\n\nthe end".format(
    "word " * 300, "\n".join(f"line {n}" for n in range(400))
)


def cut_well(replies: list[Message]) -> None:
    """``LONG`` as several messages, each within Discord's limit and its code block closed."""
    assert len(replies) > 2
    assert all(len(r.content) <= LIMIT for r in replies)
    assert all(r.content.count("```") % 2 == 0 for r in replies)  # each block closed
    assert replies[-1].content.endswith("the end")
    assert "line 0" in "".join(r.content for r in replies)
    assert "line 399" in "".join(r.content for r in replies)


def two_parts(step: asyncio.Event) -> Script:
    """A reply written in two parts, the second once ``step`` is set."""

    async def script(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        yield MessageDelta("first part")
        await step.wait()
        yield MessageDelta(", second part")
        yield MessageEnd()

    return script


def streamed(reply: Message) -> None:
    """The reply showed the first part before the whole (``two_parts``)."""
    assert reply.edits[0] == "first part"
    assert reply.edits[-1] == "first part, second part"


async def test_a_long_reply_is_cut_with_code_blocks_reopened_in_follow_ups(gateway_server):
    runtime = ScriptedRuntime(deltas(LONG), DEPLOY)
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, runtime) as h:
        payload = command("deploy")
        await h.interact(payload)
        cut_well(await h.replies(payload["token"]))


async def test_the_reply_streams_into_the_original_response(gateway_server):
    step = asyncio.Event()
    runtime = ScriptedRuntime(two_parts(step), DEPLOY)
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, runtime) as h:
        payload = command("deploy")
        await h.interact(payload)
        await asyncio.wait_for(fake.edited.wait(), 5)
        step.set()
        [reply] = await h.replies(payload["token"])
    streamed(reply)


async def test_usage_is_shown_under_the_reply(gateway_server):
    async def script(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        yield MessageDelta("done")
        yield UsageReported(input_tokens=1200, output_tokens=300)
        yield MessageEnd()

    runtime = ScriptedRuntime(script, DEPLOY)
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, runtime) as h:
        payload = command("deploy")
        await h.interact(payload)
        [reply] = await h.replies(payload["token"])
    assert reply.content.startswith("done\n\n_")
    assert "1,200" in reply.content or "1200" in reply.content or "1.2k" in reply.content


async def test_mentions_in_a_reply_ping_nobody(gateway_server):
    runtime = ScriptedRuntime(deltas("@everyone look <@123>"), DEPLOY)
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, runtime) as h:
        payload = command("deploy")
        await h.interact(payload)
        await h.replies(payload["token"])
    edits = fake.writes("PATCH", payload["token"])
    assert edits and all(c.body["allowed_mentions"] == {"parse": []} for c in edits)
