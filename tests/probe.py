"""A test entity for the embedded runtime whose turns the test controls, and a recording sink."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from contract import Classification, Command, ComposerInputMessage
from gateway.events import RuntimeEvent
from gateway.inbound import Reply, ReplySink
from gateway.runtimes.embedded import (
    EmbeddedRuntime,
    EntityDefinition,
    HandlerContext,
    HandlerError,
    InboxWake,
)


@dataclass
class Probe:
    """``/wait`` streams "started" then blocks until ``release``; ``/fail <text>`` fails."""

    gate: asyncio.Event = field(default_factory=asyncio.Event)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    seen: list[str] = field(default_factory=list)

    async def handler(self, ctx: HandlerContext) -> None:
        wake = ctx.wake
        if not isinstance(wake, InboxWake):
            return
        source: str = wake.message.payload["source"]
        self.seen.append(source)
        if source.startswith("/wait"):
            await ctx.reply("started ")
            self.started.set()
            await self.gate.wait()
            await ctx.reply("released")
        elif source.startswith("/fail"):
            raise HandlerError(source.removeprefix("/fail").strip())
        elif source.startswith("/crash"):
            raise RuntimeError("unknown command in the handler")
        elif source.startswith("plain-fail"):
            raise HandlerError("boom")
        else:
            await ctx.reply(f"got: {source}")

    def runtime(self) -> EmbeddedRuntime:
        return EmbeddedRuntime(
            EntityDefinition(
                type="probe",
                handler=self.handler,
                slash_commands=(
                    Command(name="wait", description="Block until released"),
                    Command(name="fail", description="Fail with the given text", hint="error"),
                    Command(name="crash", description="Raise inside the handler"),
                ),
            )
        )


class RecordingSink(ReplySink):
    def __init__(self) -> None:
        self.accepts: list[ComposerInputMessage | None] = []
        self.deltas: list[str] = []
        self.events: list[RuntimeEvent] = []
        self.finals: list[Reply] = []
        self.first_delta = asyncio.Event()

    async def accepted(
        self, classification: Classification, forwarded: ComposerInputMessage | None
    ) -> None:
        self.accepts.append(forwarded)

    async def delta(self, text: str) -> None:
        self.deltas.append(text)
        self.first_delta.set()

    async def event(self, event: RuntimeEvent) -> None:
        self.events.append(event)

    async def final(self, reply: Reply) -> None:
        self.finals.append(reply)


async def until(predicate: Callable[[], bool], rounds: int = 1000) -> None:
    """Yield to the event loop until ``predicate`` holds (no clock involved), or fail."""
    for _ in range(rounds):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")
