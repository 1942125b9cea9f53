"""Bounded in-memory state: dedupe windows and replay caches never grow without limit."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class BoundedTTLMap(Generic[V]):
    """A map that forgets entries older than ``ttl`` seconds and the oldest beyond ``maxsize``."""

    def __init__(
        self, maxsize: int, ttl: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.maxsize = maxsize
        self.ttl = ttl
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, V]] = OrderedDict()

    def _expire(self) -> None:
        deadline = self._clock() - self.ttl
        while self._items:
            key, (stamp, _) = next(iter(self._items.items()))
            if stamp > deadline and len(self._items) <= self.maxsize:
                return
            del self._items[key]

    def get(self, key: str) -> V | None:
        # The entry's own age, not an expiry pass: most callers read far more often than
        # they write, and ``set`` keeps the map bounded.
        item = self._items.get(key)
        if item is None or item[0] <= self._clock() - self.ttl:
            return None
        return item[1]

    def set(self, key: str, value: V) -> None:
        self._items.pop(key, None)
        self._items[key] = (self._clock(), value)
        self._expire()

    def pop(self, key: str) -> V | None:
        item = self._items.pop(key, None)
        return None if item is None else item[1]

    def __len__(self) -> int:
        self._expire()
        return len(self._items)


class DedupeWindow:
    """Remembers platform event ids for a while: ``first(key)`` is True once per key
    (``on_repeat`` is called for each repeat: metrics).
    """

    def __init__(
        self,
        maxsize: int = 10_000,
        ttl: float = 3600.0,
        on_repeat: Callable[[], None] | None = None,
    ) -> None:
        self._seen: BoundedTTLMap[bool] = BoundedTTLMap(maxsize, ttl)
        self._on_repeat = on_repeat

    def first(self, key: str) -> bool:
        if self._seen.get(key):
            if self._on_repeat is not None:
                self._on_repeat()
            return False
        self._seen.set(key, True)
        return True
