"""The embedded runtime's RFC semantics: typed wakes, slash-command helpers, validation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from contract import Command, ComposerInputMessage, ComposerInputPayload, TextNode
from gateway.events import ErrorEvent, MessageDelta, MessageEnd, RuntimeEvent, SessionUpdated
from gateway.runtimes import Turn
from gateway.runtimes.embedded import (
    EmbeddedRuntime,
    EntityDefinition,
    HandlerContext,
    InboxWake,
    ScheduleWake,
    SpawnWake,
    Wake,
)


def test_wake_is_a_discriminated_union() -> None:
    adapter: TypeAdapter[Wake] = TypeAdapter(Wake)
    inbox = adapter.validate_python(
        {"type": "inbox", "message": {"message_type": "composer_input", "payload": {"source": "x"}}}
    )
    assert isinstance(inbox, InboxWake) and inbox.message.message_type == "composer_input"
    assert isinstance(adapter.validate_python({"type": "spawn"}), SpawnWake)
    assert isinstance(adapter.validate_python({"type": "schedule", "name": "daily"}), ScheduleWake)
    with pytest.raises(ValidationError):
        adapter.validate_python({"type": "observation"})


async def collect(events: AsyncIterator[RuntimeEvent]) -> list[RuntimeEvent]:
    return [event async for event in events]


class Recorder:
    def __init__(self) -> None:
        self.wakes: list[Wake] = []
        self.updates: list[SessionUpdated] = []

    async def handler(self, ctx: HandlerContext) -> None:
        self.wakes.append(ctx.wake)
        if isinstance(ctx.wake, InboxWake):
            ctx.slash_commands.register(Command(name="a", description="dynamic a"))
            assert ctx.slash_commands.get("a") == Command(
                name="a", description="dynamic a", source="dynamic"
            )
            ctx.slash_commands.unregister("a")
            listed = ", ".join(f"{c.name}:{c.description}" for c in ctx.slash_commands.list())
            await ctx.reply(listed)


@pytest.fixture
async def session() -> Any:
    recorder = Recorder()
    runtime = EmbeddedRuntime(
        EntityDefinition(
            type="t",
            handler=recorder.handler,
            slash_commands=(Command(name="a", description="static a"),),
        )
    )
    opened = await runtime.open("test:c/1", recorder.updates.append)
    return recorder, opened


async def test_spawn_then_inbox_with_layered_commands(session: Any) -> None:
    recorder, opened = session
    assert isinstance(recorder.wakes[0], SpawnWake)
    assert recorder.updates[0].commands == (
        Command(name="a", description="static a", source="static"),
    )
    payload = ComposerInputPayload(source="hi", nodes=(TextNode(start=0, end=2, raw="hi"),))
    events = await collect(opened.run(Turn(ComposerInputMessage(payload=payload), None, "", "u")))
    assert events == [MessageDelta("a:static a"), MessageEnd("end_turn")]
    wake = recorder.wakes[1]
    assert isinstance(wake, InboxWake)
    assert wake.message.payload == {
        "source": "hi",
        "nodes": [{"kind": "text", "start": 0, "end": 2, "raw": "hi"}],
    }
    descriptions = [u.commands[0].description for u in recorder.updates if u.commands]
    assert descriptions == ["static a", "dynamic a", "static a"], (
        "unregister reveals the static one"
    )


async def test_invalid_composer_input_is_refused_with_a_clear_error(session: Any) -> None:
    recorder, opened = session
    bad = ComposerInputPayload.model_construct(
        source="hi", nodes=(TextNode.model_construct(start=0, end=2, raw="ho"),)
    )
    events = await collect(opened.run(Turn(ComposerInputMessage(payload=bad), None, "", "u")))
    assert len(events) == 1 and isinstance(events[0], ErrorEvent)
    assert "raw does not equal source.slice(0, 2)" in events[0].message
    assert len(recorder.wakes) == 1, "the handler never saw the invalid input"
