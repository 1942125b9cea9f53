"""How one input's reply appears in a Matrix room: a typing notice while the agent works, a
notice that grows by edits as the text streams (``m.replace``, paced per room), then the
final text in that notice (the rest of a long reply in more notices).

The first notice waits one edit interval, so a quick reply is one message and no edit. The
reply answers the user's message: in its thread when it was written in one, else as a reply
to it. Queued input shows a reaction until its turn ends. Tools, plan and status go to one
notice of their own, edited as the turn goes on.
"""

from __future__ import annotations

import asyncio
import logging

from mautrix.errors import MatrixError

from channels.activity import reply_text
from channels.streaming import Streaming
from gateway.api import FileReturned, PermissionRequired, Reply, ReplySink, RuntimeEvent
from gateway.offload import off_loop
from gateway.settings import CoreSettings

from .activity import ActivityNotice
from .outbox import Outbox, Target
from .permissions import Permissions
from .render import Chunk, preview, render
from .returned import Returned, send_files

log = logging.getLogger("slashgate.matrix")

TYPING_EVERY = 20.0  # seconds: sent again before its 30 s run out
QUEUED = "⏳"


class MatrixSink(Streaming, ReplySink):
    def __init__(
        self,
        outbox: Outbox,
        permissions: Permissions,
        target: Target,
        user: str,
        settings: CoreSettings,
    ):
        self.outbox = outbox
        self.permissions = permissions
        self.target = target
        self.user = user
        self.settings = settings  # the attachment limits of the files the agent returns
        super().__init__(outbox.edit_interval)
        self._notice: str | None = None  # the streamed notice's event id
        self._shows: Chunk | None = None  # what it shows
        self._activity: ActivityNotice | None = None
        self._queued: str | None = None  # the reaction's event id
        self._returned = Returned(settings)  # sent after the text

    @property
    def room(self) -> str:
        return self.target.room_id

    def was_queued(self, reactions: list[str]) -> None:
        """A recovered input's ⏳ from before the restart (the bot's only reaction on a
        person's message), taken off with its reply as any other.
        """
        if reactions:
            self._queued = reactions[0]

    async def queued(self, ahead: int) -> None:
        if self.target.event_id is None or self._queued is not None:
            return
        try:
            self._queued = await self.outbox.react(self.room, self.target.event_id, QUEUED)
        except (MatrixError, OSError) as exc:  # the reply still comes
            log.warning("queued reaction not shown: %s", exc)

    async def unqueue(self) -> None:
        """Its ⏳ taken off: its turn ended, or it never came (the input was withdrawn)."""
        if self._queued is not None:
            await self.outbox.redact(self.room, self._queued)
            self._queued = None

    async def event(self, event: RuntimeEvent) -> None:
        if isinstance(event, FileReturned):
            self._returned.add(event)
            return
        if isinstance(event, PermissionRequired):
            await self.permissions.ask(self.target, self.user, event)
            return
        if self._activity is None:
            self._activity = ActivityNotice(self.outbox, self.target)
        self._activity.update(event)

    async def final(self, reply: Reply) -> None:
        await self._stop_streaming()
        if self._activity is not None:
            await self._activity.finish()
        await self.unqueue()
        text = reply_text(reply) or "…"
        chunks = await off_loop(len(text), render, text)  # a long reply: off the event loop
        try:
            await self._deliver(chunks)
        except (MatrixError, OSError) as exc:  # tried again already: one line, no more
            log.error("reply in room %s not delivered: %s", self.room, exc)
        if self._returned:
            await send_files(self.outbox, self.target, self._returned)
        if self._typing is not None:
            await self.outbox.typing(self.room, False)

    async def _deliver(self, chunks: list[Chunk]) -> None:
        """The chunks in order, the first into the streamed notice when there is one; the
        first that cannot be delivered ends it (a reply with a hole would mislead).
        """
        first = 0
        if self._notice is not None:
            if chunks[0] != self._shows:
                await self.outbox.edit(self.room, self._notice, chunks[0])
            first = 1
        for i, chunk in enumerate(chunks[first:], start=first):
            relation = self.target.relation() if i == 0 else self.target.following()
            await self.outbox.notice(self.room, chunk, relation)

    # -- typing and previews --------------------------------------------------------------

    async def _keep_typing(self) -> None:
        while True:
            await self.outbox.typing(self.room, True)
            await asyncio.sleep(TYPING_EVERY)

    async def _stream(self) -> None:
        dirty = self._dirty
        assert dirty is not None
        loop = asyncio.get_running_loop()
        last = 0.0
        while True:
            await dirty.wait()
            # One edit an interval in this room at most, whatever the pacer would allow.
            await asyncio.sleep(max(0.0, last + self.outbox.edit_interval - loop.time()))
            # The slot first, then the text: under pressure the slot comes late, and the
            # edit it carries shows all that arrived meanwhile (docs/rate-limits.md).
            async with self.outbox.slot(self.room):
                dirty.clear()
                chunk = preview("".join(self._parts))
                if chunk is not None and chunk != self._shows:
                    # Shielded: stopping the stream must not abort a send half-way (a lost
                    # event id would leave a stray notice behind).
                    self._showing = asyncio.ensure_future(self._show(chunk))
                    await asyncio.shield(self._showing)
                    last = loop.time()

    async def _show(self, chunk: Chunk) -> None:
        try:
            if self._notice is None:
                self._notice = await self.outbox.notice(self.room, chunk, self.target.relation())
            else:
                await self.outbox.edit(self.room, self._notice, chunk)
            self._shows = chunk
        except (MatrixError, OSError) as exc:  # a preview is best effort; the final is not
            log.warning("preview not shown: %s", exc)
