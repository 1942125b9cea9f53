"""One caller at a time, the urgent ones first: the line in front of a rate limit.

A caller holds its turn while it waits for a token, so that only the head of the line waits
for the clock. A preview at the head gives way to a final reply: its ``Place.preempted`` is
set as soon as an urgent caller joins the line, and it goes back in line (in its old place
among the previews: ``order``).
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from heapq import heappop, heappush


class Preempted(Exception):
    """A preview gave way to a final reply: it goes back in line."""


@dataclass(frozen=True, slots=True)
class Place:
    order: int  # the caller's place: given back to ``turn`` when it comes again
    preempted: asyncio.Future[None] | None  # a preview's: set when it is to give way


class Gate:
    def __init__(self) -> None:
        self._line: list[tuple[int, int, asyncio.Future[None]]] = []
        self._busy = False
        self._order = itertools.count()
        self._give_way: asyncio.Future[None] | None = None  # the holder's, a preview's

    @property
    def waiting(self) -> int:
        """Callers in line (cancelled ones included until they are passed over)."""
        return len(self._line)

    async def enter(
        self,
        urgent: bool,
        order: int | None = None,
        abandon: asyncio.Future[None] | None = None,
    ) -> Place:
        """Wait for this caller's turn, held until ``leave`` (in a ``finally``). A caller
        cancelled while it waits takes no turn; one cancelled just as its turn came hands it
        to the next. ``abandon`` done while it waits: it leaves the line (``Preempted``).
        A coroutine and a call, not a context manager: every paced platform call enters two
        gates, and a generator-based one costs a generator, its context manager and their
        entry and exit each time.
        """
        loop = asyncio.get_running_loop()
        place = next(self._order) if order is None else order
        if self._busy:
            future = loop.create_future()
            heappush(self._line, (0 if urgent else 1, place, future))
            if urgent and self._give_way is not None and not self._give_way.done():
                self._give_way.set_result(None)
            try:
                if abandon is None:
                    await future
                else:
                    await asyncio.wait({future, abandon}, return_when=asyncio.FIRST_COMPLETED)
                    if not future.done():
                        future.cancel()  # passed over when its turn comes
                        raise Preempted
            except BaseException:
                if future.done() and not future.cancelled():
                    self._hand_on()
                else:
                    future.cancel()  # passed over when its turn comes (asyncio.wait kept it)
                raise
        else:
            self._busy = True
        give_way = None if urgent else loop.create_future()
        self._give_way = give_way
        return Place(place, give_way)

    def leave(self) -> None:
        """The turn ``enter`` gave is over: the next caller's."""
        self._give_way = None
        self._hand_on()

    def _hand_on(self) -> None:
        while self._line:
            _, _, future = heappop(self._line)
            if not future.done():
                future.set_result(None)
                return  # still busy: the turn is the next caller's
        self._busy = False
