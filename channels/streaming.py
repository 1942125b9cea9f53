"""The typing indicator and the streamed preview of one chat reply, as the chat channels'
sinks run them (Telegram, Matrix). Both start on timers, so a quick reply makes no task and
no request: typing after ``TYPING_DELAY``, the first preview one edit interval after the
input arrived. Both stop before the final reply goes out, and whatever went wrong in them,
the final still goes.

A sink says how to show typing once (``_keep_typing``) and how to stream (``_stream``, which
waits on ``_dirty`` and shows ``_parts`` under the platform's pacing); the timers, the tasks
and their ends are here, and so are the sink hooks that start them (``accepted``, ``delta``),
the same in every chat channel, and their end (``aclose``, the activity's end with them).
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod

from contract import Classification, ComposerInputMessage

from .activity import LiveActivity

log = logging.getLogger("slashgate.streaming")

TYPING_DELAY = 0.5  # seconds: a reply quicker than this never shows "typing"


class Streaming(ABC):
    def __init__(self, interval: float) -> None:
        self._interval = interval  # seconds between two previews in one chat
        self._parts: list[str] = []
        self._dirty: asyncio.Event | None = None  # made when previews start
        self._typing_soon: asyncio.TimerHandle | None = None
        self._previews_soon: asyncio.TimerHandle | None = None
        self._typing: asyncio.Task[None] | None = None
        self._previews: asyncio.Task[None] | None = None
        self._showing: asyncio.Future[None] | None = None  # a preview being sent
        self._started = asyncio.get_running_loop().time()
        self._activity: LiveActivity | None = None  # the sink's, made with the first event
        self._stopped = False  # ``_stop_streaming`` ended: ``aclose`` has nothing to stop

    async def accepted(
        self, classification: Classification, forwarded: ComposerInputMessage | None
    ) -> None:
        """The input runs: typing shows if its reply takes a while."""
        self._type_soon()

    async def delta(self, text: str) -> None:
        """More text: a wait for permission is over, and the next preview shows it."""
        if self._activity is not None:
            self._activity.progress()
        self._add(text)

    @abstractmethod
    async def _keep_typing(self) -> None:
        """Show typing until cancelled."""

    @abstractmethod
    async def _stream(self) -> None:
        """Show the text so far each time ``_dirty`` is set, until cancelled."""

    def _type_soon(self) -> None:
        if self._typing_soon is None:
            loop = asyncio.get_running_loop()
            self._typing_soon = loop.call_later(TYPING_DELAY, self._start_typing)

    def _add(self, text: str) -> None:
        """More of the reply's text: shown by the next preview."""
        self._parts.append(text)
        if self._dirty is not None:
            self._dirty.set()
        elif self._previews_soon is None:  # the first preview waits one edit interval
            loop = asyncio.get_running_loop()
            self._previews_soon = loop.call_at(self._started + self._interval, self._start_previews)

    def _start_typing(self) -> None:
        self._typing = asyncio.create_task(self._keep_typing())

    def _start_previews(self) -> None:
        self._dirty = asyncio.Event()
        self._dirty.set()
        self._previews = asyncio.create_task(self._stream())

    def _cancel_timers(self) -> None:
        for timer in (self._typing_soon, self._previews_soon):
            if timer is not None:
                timer.cancel()

    async def _stop_streaming(self) -> None:
        """End typing and previews before the final reply; a preview half-sent lands first."""
        self._cancel_timers()
        tasks: list[asyncio.Future[None]] = [
            t for t in (self._typing, self._previews) if t is not None
        ]
        for task in tasks:
            task.cancel()
        if self._showing is not None:
            tasks.append(self._showing)
        if tasks:
            for result in await asyncio.gather(*tasks, return_exceptions=True):
                if isinstance(result, Exception):
                    log.error("streaming failed", exc_info=result)
        self._stopped = True

    async def aclose(self) -> None:
        """Stop typing and previews and the activity's changes, whether or not the final
        went (the input may have been cancelled, or the core may have failed before it).
        """
        if not self._stopped:  # else the final stopped typing and previews already
            self._cancel_timers()
            tasks = [t for t in (self._typing, self._previews, self._showing) if t is not None]
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
        if self._activity is not None:
            await self._activity.aclose()
