"""Replies in Discord: streamed by editing the deferred response, then cut at 2,000
characters with code blocks reopened and follow-ups for the rest; usage shown at the end.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from contract import Command
from gateway.events import MessageDelta, MessageEnd, RuntimeEvent, UsageReported
from gateway.runtimes import Turn
from tests.slack.slack_harness import ScriptedRuntime, ScriptedSession, deltas

from .fake import LIMIT, fake_discord
from .harness import discord_gateway
from .interactions import command

DEPLOY = (Command(name="deploy"),)


async def test_a_long_reply_is_cut_with_code_blocks_reopened_in_follow_ups(gateway_server):
    prose = "word " * 300
    code = "\n".join(f"line {n}" for n in range(400))
    text = f"{prose}\n\n```python\n{code}\n```\n\nthe end"
    runtime = ScriptedRuntime(deltas(text), DEPLOY)
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, runtime) as h:
        payload = command("deploy")
        await h.interact(payload)
        replies = await h.replies(payload["token"])
    assert len(replies) > 2
    assert all(len(r.content) <= LIMIT for r in replies)
    assert all(r.content.count("```") % 2 == 0 for r in replies)  # each block closed
    assert replies[-1].content.endswith("the end")
    assert "line 0" in "".join(r.content for r in replies)
    assert "line 399" in "".join(r.content for r in replies)


async def test_the_reply_streams_into_the_original_response(gateway_server):
    step = asyncio.Event()

    async def script(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        yield MessageDelta("first part")
        await step.wait()
        yield MessageDelta(", second part")
        yield MessageEnd()

    runtime = ScriptedRuntime(script, DEPLOY)
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, runtime) as h:
        payload = command("deploy")
        await h.interact(payload)
        await asyncio.wait_for(fake.edited.wait(), 5)
        step.set()
        [reply] = await h.replies(payload["token"])
    assert reply.edits[0] == "first part"
    assert reply.edits[-1] == "first part, second part"


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
