"""The access books in the state store: read at most once a second per channel (a change made
by ``slashgate access`` or another replica is honoured within that), changed under a lease.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import TypeVar

from ..state import StateStore, StoreUnavailable
from ..state.base import KEPT
from .book import Book

T = TypeVar("T")
MAX_AGE = 1.0  # seconds a book read from the store is used before it is read again
HOLD_TTL = 10.0  # seconds a change may hold the channel's lease (a dead CLI's lets go then)
HOLD_WAIT = 10.0  # seconds a change waits for another one's lease
_POLL = 0.02


def key(channel: str) -> str:
    return f"{KEPT}{channel}"  # never evicted by the store's bound on keys


class Books:
    def __init__(self, store: StateStore, max_age: float = MAX_AGE) -> None:
        self._store = store
        self.max_age = max_age
        self._read: dict[str, tuple[float, Book]] = {}
        self._me = f"access-{uuid.uuid4().hex}"

    def cached(self, channel: str) -> Book:
        """The book as last read (empty before the first read)."""
        found = self._read.get(channel)
        return found[1] if found is not None else EMPTY

    async def of(self, channel: str) -> Book:
        """The channel's book, read again when the copy at hand is older than ``max_age``.
        While the store does not answer, the copy at hand serves (none: StoreUnavailable).
        """
        now = time.monotonic()
        found = self._read.get(channel)
        if found is not None and now - found[0] < self.max_age:
            return found[1]
        if found is not None:  # the inputs meanwhile use this copy: one read at a time
            self._read[channel] = (now, found[1])
        try:
            book = Book.load(await self._store.get(key(channel)))
        except StoreUnavailable:
            if found is None:
                raise
            return found[1]
        self._read[channel] = (time.monotonic(), book)
        return book

    async def change(self, channel: str, edit: Callable[[Book], T]) -> T:
        """``edit`` the channel's book as stored now, and store it; one change at a time
        across replicas and CLI runs.
        """
        name = key(channel)
        deadline = time.monotonic() + HOLD_WAIT
        lease = await self._store.acquire(name, self._me, HOLD_TTL)
        while lease is None:
            if time.monotonic() > deadline:
                raise StoreUnavailable(f"the access records of {channel} stay locked")
            await asyncio.sleep(_POLL)
            lease = await self._store.acquire(name, self._me, HOLD_TTL)
        try:
            book = Book.load(await self._store.get(name))
            result = edit(book)
            await self._store.set(name, book.dump())
        finally:
            await self._store.release(lease)
        self._read[channel] = (time.monotonic(), book)
        return result


EMPTY = Book()  # read only: the book of a channel nothing was approved on
