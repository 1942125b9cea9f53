"""One interaction's reply in Discord: the deferred response edited as the runtime writes
(at most once per ``interval``), then the final reply in it and follow-ups for the rest.

A rejection (the input did not run) and a host command's answer are for the user alone: the
deferred response was ephemeral when that was known at once; otherwise the public "thinking"
response is deleted and the rejection follows ephemerally. A failure of a command that was
taken (``generic``, ``timeout``, the restart notice after a crash) ends the public response,
where everyone saw it start.
"""

from __future__ import annotations

import asyncio
import contextlib

from contract import Category, Classification, ComposerInputMessage
from gateway.api import PermissionRequired, Reply, ReplySink, RuntimeEvent

from .activity import ActivityMessage
from .messages import Messages
from .permissions import Permissions
from .render import messages, preview

# The categories of an input refused before it ran: only its user needs to know.
REFUSED: frozenset[Category] = frozenset(
    {"invalid", "unsupported", "interactive_only", "busy", "forbidden", "rate_limited"}
)


class DiscordSink(ReplySink):
    def __init__(
        self,
        messages: Messages,
        permissions: Permissions,
        interval: float,
        show_reasoning: bool = True,
    ) -> None:
        self.messages = messages
        self.activity: ActivityMessage | None = None  # made with the first agent event
        self.show_reasoning = show_reasoning
        self.permissions = permissions
        self.interval = interval
        self.finished = False
        self._accepted = False
        self._text = ""
        self._shown: str | None = None  # what the original response shows of the reply
        self._dirty = asyncio.Event()
        self._stream: asyncio.Task[None] | None = None
        self._stream_soon: asyncio.TimerHandle | None = None  # the first preview's timer
        self._editing: asyncio.Future[None] | None = None  # a preview's edit, once it went

    async def accepted(
        self, classification: Classification, forwarded: ComposerInputMessage | None
    ) -> None:
        self._accepted = True

    async def delta(self, text: str) -> None:
        if self.activity is not None:
            self.activity.progress()
        self._text += text
        self._dirty.set()
        if self._stream_soon is None:  # the first preview after one interval: an instant
            # reply makes no task (its final edit is the one call)
            loop = asyncio.get_running_loop()
            self._stream_soon = loop.call_later(self.interval, self._start_streaming)

    def _start_streaming(self) -> None:
        self._stream = asyncio.create_task(self._streaming())

    async def event(self, event: RuntimeEvent) -> None:
        if isinstance(event, PermissionRequired):
            text, rows = self.permissions.prompt(event, self.messages.target)
            if await self.messages.follow_up(text, False, rows) is None:
                # Without the buttons the user would not know the turn waits for them.
                options = ", ".join(o.name or o.option_id for o in event.options)
                await self.messages.follow_up(f"{text}\n{options}", False)
        else:
            if self.activity is None:
                self.activity = ActivityMessage(self.messages, self.interval, self.show_reasoning)
            self.activity.update(event)

    async def final(self, reply: Reply) -> None:
        self.finished = True
        await self._stop_streaming()
        if self.activity is not None:
            await self.activity.finish()
        parts = messages(reply)
        target = self.messages.target
        private = reply.category in REFUSED and not self._accepted
        if private and not target.ephemeral and await self.messages.delete():
            for part in parts:
                if await self.messages.follow_up(part, True) is None:
                    return
            return
        if parts[0] != self._shown and not await self.messages.edit(parts[0]):
            return
        for part in parts[1:]:
            if await self.messages.follow_up(part, target.ephemeral) is None:
                return  # logged; the rest of a reply with a hole would mislead

    async def aclose(self) -> None:
        """The input is over, with or without a final reply: no more changes. Without one
        (the access policy ignored it), the "thinking" response goes: nothing is said.
        """
        await self._stop_streaming()
        if self.activity is not None:
            self.activity.cancel()
        if not self.finished:
            await self.messages.delete()

    async def _stop_streaming(self) -> None:
        """No more previews; one that went out lands first (else the final reply, not knowing
        what it shows, would edit again).
        """
        if self._stream_soon is not None:
            self._stream_soon.cancel()
            self._stream_soon = None
        if self._stream is not None:
            self._stream.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._stream
            self._stream = None
        if self._editing is not None:
            await asyncio.wait({self._editing})
            self._editing = None

    async def _streaming(self) -> None:
        """Started one interval after the first text: show the text so far; again at most
        once an interval while more comes. An instant reply so costs one edit, the final one.
        """
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            text = preview(self._text)
            self._editing = asyncio.ensure_future(self._edit(text))
            await asyncio.shield(self._editing)
            await asyncio.sleep(self.interval)

    async def _edit(self, text: str) -> None:
        if await self.messages.edit(text):
            self._shown = text
