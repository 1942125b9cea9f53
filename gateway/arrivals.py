"""Arrival order: each input of a conversation takes its place in line when it reaches the
gateway (``accept``, or ``handle`` for an input that is not journaled), before anything is
awaited. The run queue takes the conversation's inputs in that order: an input that is ready
to queue waits while one that arrived before it has neither queued nor left. Without it, two
inputs sent back to back could swap places while each awaited the store (the journal, the
access book) or the channel (a "queued" reaction).
"""

from __future__ import annotations

import asyncio
from typing import Protocol


class RunQueue(Protocol):
    """A conversation's run queue as a withdrawal sees it (``Conversation``)."""

    def withdraw(self, waiter: asyncio.Future[bool]) -> bool: ...


Queued = tuple[RunQueue, asyncio.Future[bool]]  # where a queued input waits, and its waiter


class Place:
    """One input's place in its conversation's line, until it queued for its turn or left;
    then, until its turn starts, where it waits in the run queue, should it be withdrawn
    (gateway/withdrawals.py).
    """

    __slots__ = ("first", "key", "queue", "settled", "started", "waiter", "withdrawn")

    def __init__(self, key: str, first: bool) -> None:
        self.key = key
        self.first = first  # no input before it is still on its way: it need not wait
        self.settled = False
        self.waiter: asyncio.Future[None] | None = None  # made only when it has to wait
        self.queue: Queued | None = None  # where it waits for the run slot, once it queued
        self.started = False  # its turn started: too late to withdraw it
        self.withdrawn = False  # withdrawn before its turn: it never runs


class Arrivals:
    """The lines of the conversations that have inputs on their way: a line is dropped when
    its last input settled, so there are only as many as conversations with inputs in flight.
    """

    def __init__(self) -> None:
        self._lines: dict[str, list[Place]] = {}

    def arrive(self, key: str) -> Place:
        """The next place in conversation ``key``'s line: taken now, without a pass of the loop."""
        line = self._lines.get(key)
        if line is None:
            place = Place(key, True)
            self._lines[key] = [place]
        else:
            place = Place(key, False)
            line.append(place)
        return place

    async def turn(self, place: Place) -> None:
        """Until every input that arrived before ``place`` has queued or left (callers skip
        the call when ``place.first``: the usual case).
        """
        if place.first:
            return
        place.waiter = asyncio.get_running_loop().create_future()
        await place.waiter

    def settle(self, place: Place) -> None:
        """``place``'s input queued for its turn, or left (answered, refused, failed): the
        inputs behind it may go on. Again for the same place: nothing (callers skip the call
        when ``place.settled``).
        """
        if place.settled:
            return
        place.settled = True
        line = self._lines[place.key]
        if line[0] is not place:
            return  # those before it are still on their way: it leaves the line after them
        del line[0]
        while line and line[0].settled:
            del line[0]
        if not line:
            del self._lines[place.key]
            return
        line[0].first = True
        if (waiter := line[0].waiter) is not None and not waiter.done():
            waiter.set_result(None)

    def __len__(self) -> int:
        return len(self._lines)
