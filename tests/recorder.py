"""The recording sink of the runtime tests: what a user of a channel would see for one input."""

from __future__ import annotations

import asyncio

from gateway.events import PermissionRequired, RuntimeEvent
from gateway.inbound import Reply
from tests.probe import RecordingSink


class Recorder(RecordingSink):
    """A RecordingSink that also hands over the first permission request as it comes."""

    def __init__(self) -> None:
        super().__init__()
        self.permission: asyncio.Future[PermissionRequired] = (
            asyncio.get_running_loop().create_future()
        )

    async def event(self, event: RuntimeEvent) -> None:
        await super().event(event)
        if isinstance(event, PermissionRequired) and not self.permission.done():
            self.permission.set_result(event)

    @property
    def reply(self) -> Reply | None:
        """The final reply; the core sends exactly one."""
        assert len(self.finals) <= 1, self.finals
        return self.finals[0] if self.finals else None

    @property
    def text(self) -> str:
        assert self.reply is not None, "no final reply"
        return self.reply.text
