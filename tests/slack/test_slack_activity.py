"""What the agent does while it answers, on Slack: one message of context blocks (tools,
status, reasoning) and a plan checklist, updated in place; usage under the reply; a
reaction on queued messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from contract import Command
from gateway.events import (
    MessageDelta,
    MessageEnd,
    PlanEntry,
    PlanUpdated,
    ReasoningDelta,
    RuntimeEvent,
    ToolEnd,
    ToolStart,
    UsageReported,
)
from gateway.runtimes import Turn
from tests.slack.slack_fake import WAIT, FakeSlack, Message, direct_message, fake_slack
from tests.slack.slack_harness import Held, ScriptedRuntime, ScriptedSession, lead, slack_gateway

DEPLOY = (Command(name="deploy", description="Deploy a build"),)


def with_blocks(fake: FakeSlack) -> list[Message]:
    return [m for m in fake.messages() if m.blocks]


def block_texts(message: Message) -> list[tuple[str, str]]:
    """(block type, its mrkdwn) of each block."""
    out = []
    for block in message.blocks or ():
        if block["type"] == "context":
            out.append(("context", block["elements"][0]["text"]))
        else:
            out.append((block["type"], block["text"]["text"]))
    return out


def working(fake: FakeSlack) -> Any:
    async def script(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        yield ReasoningDelta("Check the build first.")
        yield PlanUpdated((PlanEntry("Build"), PlanEntry("Deploy")))
        yield ToolStart("t1", "Run make", "execute")
        await fake.wait_for(lambda: with_blocks(fake))
        yield ToolEnd("t1", "completed", "ok")
        yield PlanUpdated((PlanEntry("Build", "completed"), PlanEntry("Deploy", "in_progress")))
        await fake.wait_for(lambda: "✅ Run make" in str(with_blocks(fake)[0].blocks))
        yield MessageDelta("Deployed.")
        yield UsageReported(input_tokens=10, output_tokens=5, cost=0.0012)
        yield MessageEnd()

    return script


async def test_tool_calls_and_a_plan_in_one_message_updated_in_place(gateway_server: Any) -> None:
    async with fake_slack() as fake:
        runtime = ScriptedRuntime(working(fake))
        async with slack_gateway(gateway_server, fake, runtime) as h:
            h.channel.outbox.update_interval = 0
            await h.slack.event(direct_message("ship it", ts="5.1"))
            await h.channel.drain(WAIT)
    [activity] = with_blocks(fake)
    assert activity.thread_ts == "5.1"
    assert block_texts(activity) == [
        ("context", "✅ Run make — ok"),
        ("section", "*Plan*\n✅ Build\n▶️ Deploy"),
        ("context", "💭 _Check the build first._"),
    ]
    assert len(fake.of("chat.update")) >= 1  # the same message, updated
    reply = [m for m in fake.messages() if not m.blocks][-1]
    assert reply.text.endswith("Deployed.\n\n_15 tokens (10 in, 5 out) · 0.0012 USD_")


async def test_a_slash_commands_first_message_says_who_ran_it(gateway_server: Any) -> None:
    async with fake_slack() as fake:
        runtime = ScriptedRuntime(working(fake), DEPLOY)
        async with slack_gateway(gateway_server, fake, runtime, show_reasoning="off") as h:
            h.channel.outbox.update_interval = 0
            await h.slack.command(
                "/deploy", "prod", channel="C7", response_url=fake.response_url("r")
            )
            await h.channel.drain(WAIT)
    activity, reply = fake.messages("C7")
    assert lead(activity) == "/deploy prod"
    assert block_texts(activity)[0] == ("context", "<@U1> ran `/deploy prod`")
    assert all("Check the build" not in text for _, text in block_texts(activity))  # off
    assert lead(reply) is None and reply.text.startswith("Deployed.")


async def test_a_queued_message_gets_a_reaction_until_answered(gateway_server: Any) -> None:
    held = Held("first")
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, ScriptedRuntime(held)) as h,
    ):
        await h.slack.event(direct_message("one", ts="6.1"))
        await asyncio.wait_for(held.started.wait(), WAIT)
        await h.slack.event(direct_message("two", ts="6.2"))
        [added] = await fake.wait_calls("reactions.add")
        assert (added.params["channel"], added.params["timestamp"]) == ("D1", "6.2")
        assert added.params["name"] == "eyes"
        assert fake.of("reactions.remove") == []
        held.release.set()
        await h.channel.drain(WAIT)
    [removed] = fake.of("reactions.remove")
    assert removed.params["timestamp"] == "6.2"
