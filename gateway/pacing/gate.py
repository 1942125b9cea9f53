"""One caller at a time, the urgent ones first: the line in front of a rate limiter.

aiolimiter serves its waiters in arrival order; the pacer puts a ``Gate`` before each limiter
so that a final reply goes before the previews that were waiting, and so that only the head
of the line waits inside the limiter.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from heapq import heappop, heappush


class Gate:
    def __init__(self) -> None:
        self._line: list[tuple[int, int, asyncio.Future[None]]] = []
        self._busy = False
        self._order = itertools.count()

    @property
    def waiting(self) -> int:
        """Callers in line (cancelled ones included until they are passed over)."""
        return len(self._line)

    @asynccontextmanager
    async def turn(self, urgent: bool) -> AsyncIterator[None]:
        """Wait for this caller's turn and hold it while inside. A caller cancelled while it
        waits takes no turn; one cancelled just as its turn came hands it to the next.
        """
        if self._busy:
            future = asyncio.get_running_loop().create_future()
            heappush(self._line, (0 if urgent else 1, next(self._order), future))
            try:
                await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():
                    self._hand_on()
                raise
        else:
            self._busy = True
        try:
            yield
        finally:
            self._hand_on()

    def _hand_on(self) -> None:
        while self._line:
            _, _, future = heappop(self._line)
            if not future.done():
                future.set_result(None)
                return  # still busy: the turn is the next caller's
        self._busy = False
