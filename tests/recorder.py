"""A ReplySink that records what a user of a channel would see for one input."""

from __future__ import annotations

import asyncio

from contract import Classification, ComposerInputMessage
from gateway.events import PermissionRequired, RuntimeEvent
from gateway.inbound import Reply, ReplySink


class Recorder(ReplySink):
    def __init__(self) -> None:
        self.deltas: list[str] = []
        self.events: list[RuntimeEvent] = []
        self.reply: Reply | None = None
        loop = asyncio.get_running_loop()
        self.permission: asyncio.Future[PermissionRequired] = loop.create_future()
        self.first_delta = asyncio.Event()

    async def accepted(
        self, classification: Classification, forwarded: ComposerInputMessage | None
    ) -> None:
        pass

    async def delta(self, text: str) -> None:
        self.deltas.append(text)
        self.first_delta.set()

    async def event(self, event: RuntimeEvent) -> None:
        self.events.append(event)
        if isinstance(event, PermissionRequired) and not self.permission.done():
            self.permission.set_result(event)

    async def final(self, reply: Reply) -> None:
        self.reply = reply

    @property
    def text(self) -> str:
        assert self.reply is not None, "no final reply"
        return self.reply.text
