"""What the agent does while it answers, on Telegram: one compact message edited in place
(status, tool calls, the plan as a checklist, reasoning collapsed), usage under the reply.
"""

from __future__ import annotations

from gateway.events import (
    MessageDelta,
    MessageEnd,
    PermissionOption,
    PermissionRequired,
    PlanEntry,
    PlanUpdated,
    ReasoningDelta,
    StatusChanged,
    ToolEnd,
    ToolRunning,
    ToolStart,
    UsageReported,
)

from .fake_bot_api import FakeBotAPI
from .helpers import GROUP, PRIVATE, Scripted, Start, message_update

FAST = {"telegram_edit_interval": 0.01}


async def test_tool_calls_and_a_plan_in_one_message_edited_in_place(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted()
    async with telegram(runtime, **FAST) as served:
        await served.post(message_update(GROUP, "@gw_bot run the tests"))
        turn = await runtime.next_turn()
        turn.emit(
            ReasoningDelta("First read, "),
            ReasoningDelta("then test."),
            PlanUpdated((PlanEntry("Read the code"), PlanEntry("Run the tests"))),
            ToolStart("t1", "Read app.py", "read"),
        )
        await fake.wait(lambda: any("Read app.py" in t for t in fake.texts(GROUP)))
        [activity] = fake.messages(GROUP)
        assert activity.reply_to is not None  # in a group it answers the user's message
        turn.emit(
            ToolEnd("t1", "completed", "42 lines\nmore"),
            PlanUpdated(
                (PlanEntry("Read the code", "completed"), PlanEntry("Run the tests", "in_progress"))
            ),
            ToolStart("t2", "Run pytest", "execute"),
            ToolRunning("t2"),
        )
        await fake.wait(lambda: "⚙️ Run pytest" in activity.text)
        turn.emit(
            ToolEnd("t2", "failed"),
            MessageDelta("2 tests failed."),
            UsageReported(input_tokens=1000, output_tokens=234),
            MessageEnd(),
        )
        await fake.wait(lambda: len(fake.messages(GROUP)) == 2)
        activity, reply = fake.messages(GROUP)
        # The same message, edited: the tools, then the plan as a checklist, then the thoughts.
        assert activity.edits >= 1
        assert activity.text == (
            "✅ Read app.py — 42 lines\n"
            "❌ Run pytest\n"
            "📋 Plan\n"
            "✅ Read the code\n"
            "▶️ Run the tests\n"
            "💭 First read, then test."
        )
        assert "<blockquote expandable>💭 First read, then test.</blockquote>" in activity.raw
        assert "<b>Plan</b>" in activity.raw
        # The reply, with the turn's usage at its end.
        assert reply.text == "2 tests failed.\n\n1,234 tokens (1,000 in, 234 out)"
        assert {"type": "italic", "offset": 17, "length": 32} in reply.entities


async def test_reasoning_off_by_config_and_status_lines(telegram: Start, fake: FakeBotAPI) -> None:
    runtime = Scripted()
    async with telegram(runtime, show_reasoning="off", **FAST) as served:
        await served.post(message_update(GROUP, "@gw_bot hello"))
        turn = await runtime.next_turn()
        turn.emit(ReasoningDelta("private thoughts"), StatusChanged("retrying", "attempt 1 of 3"))
        await fake.wait(lambda: len(fake.messages(GROUP)) == 1)
        [status] = fake.messages(GROUP)
        assert status.text == "🔁 Retrying (attempt 1 of 3)"
        turn.emit(StatusChanged("generating"), MessageDelta("hi"), MessageEnd())
        await fake.wait(lambda: fake.texts(GROUP) == ["hi"])
        # A status alone leaves nothing behind once the turn is over.
        assert [d.text for d in fake.deleted] == ["🔁 Retrying (attempt 1 of 3)"]
        assert all("private thoughts" not in c.params.get("text", "") for c in fake.calls)


async def test_waiting_for_permission_alone_is_said_by_the_request(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted()
    async with telegram(runtime, **FAST) as served:
        await served.post(message_update(PRIVATE, "clean up"))
        turn = await runtime.next_turn()
        turn.emit(
            PermissionRequired("r1", "Delete build/", (PermissionOption("ok", "Allow"),)),
        )
        await fake.wait(lambda: len(fake.messages(PRIVATE)) == 1)
        turn.emit(ToolStart("t1", "Delete build/", "delete"))
        await fake.wait(lambda: len(fake.messages(PRIVATE)) == 2)
        prompt, activity = fake.messages(PRIVATE)
        assert prompt.text.startswith("🔐 Permission needed")
        # The first tool event after the request: the agent goes on, no waiting line.
        assert activity.text == "⏳ Delete build/"
        turn.emit(MessageEnd())
        await fake.wait(lambda: len(fake.messages(PRIVATE)) == 3)
