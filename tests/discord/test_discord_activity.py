"""Agent events in Discord: tool calls, plan and status in one follow-up changed in place,
kept at the end with what the turn did.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from contract import Command
from gateway.events import (
    MessageDelta,
    MessageEnd,
    PlanEntry,
    PlanUpdated,
    RuntimeEvent,
    ToolEnd,
    ToolStart,
)
from gateway.runtimes import Turn
from tests.slack.slack_harness import ScriptedRuntime, ScriptedSession

from .fake import fake_discord
from .harness import discord_gateway
from .interactions import command


async def script(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
    yield ToolStart("t1", "Read README.md", "read")
    yield PlanUpdated((PlanEntry("read the docs", "completed"), PlanEntry("write the fix")))
    yield ToolEnd("t1", "completed", "42 lines")
    yield MessageDelta("fixed")
    yield MessageEnd()


async def test_tools_and_plan_are_shown_in_one_follow_up(gateway_server):
    runtime = ScriptedRuntime(script, (Command(name="deploy"),))
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, runtime) as h:
        payload = command("deploy")
        await h.interact(payload)
        original, activity = await h.replies(payload["token"])
    assert original.content == "fixed"
    assert "Read README.md" in activity.content and "42 lines" in activity.content
    assert "**Plan**" in activity.content
    assert "✅ read the docs" in activity.content and "⬜ write the fix" in activity.content
