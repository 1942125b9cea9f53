"""Any store with each operation timed: ``observe(operation, seconds)`` once it is done, failed
operations included (``Metrics.store_observer``: ``slashgate_store_seconds``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from .base import Entry, Lease, StateStore

T = TypeVar("T")


class TimedStore(StateStore):
    def __init__(self, inner: StateStore, observe: Callable[[str, float], None]) -> None:
        self.inner = inner
        self.shared = inner.shared
        self.kind = inner.kind
        self._observe = observe

    async def _timed(self, operation: str, step: Awaitable[T]) -> T:
        started = time.perf_counter()
        try:
            return await step
        finally:
            self._observe(operation, time.perf_counter() - started)

    async def open(self) -> None:
        await self._timed("open", self.inner.open())

    async def close(self) -> None:
        await self._timed("close", self.inner.close())

    async def ping(self) -> None:
        await self._timed("ping", self.inner.ping())

    async def get(self, key: str) -> Any | None:
        return await self._timed("get", self.inner.get(key))

    async def set(self, key: str, value: Any) -> None:
        await self._timed("set", self.inner.set(key, value))

    async def delete(self, key: str) -> bool:
        return await self._timed("delete", self.inner.delete(key))

    async def claim(self, key: str, value: Any, ttl: float) -> tuple[bool, Any | None]:
        return await self._timed("claim", self.inner.claim(key, value, ttl))

    async def recall(self, key: str) -> Any | None:
        return await self._timed("recall", self.inner.recall(key))

    async def remember(self, key: str, value: Any, ttl: float) -> None:
        await self._timed("remember", self.inner.remember(key, value, ttl))

    async def forget(self, key: str) -> None:
        await self._timed("forget", self.inner.forget(key))

    async def append(
        self, entry: Entry, claim: str | None, ttl: float, value: Any = 1
    ) -> Entry | None:
        return await self._timed("append", self.inner.append(entry, claim, ttl, value))

    async def update(self, entry: Entry, fence: Lease | None = None) -> bool:
        return await self._timed("update", self.inner.update(entry, fence))

    async def finish(self, entry: Entry) -> None:
        await self._timed("finish", self.inner.finish(entry))

    async def pending(self, conversation: str | None = None) -> list[Entry]:
        return await self._timed("pending", self.inner.pending(conversation))

    async def acquire(self, name: str, owner: str, ttl: float) -> Lease | None:
        return await self._timed("acquire", self.inner.acquire(name, owner, ttl))

    async def take_turn(
        self,
        name: str,
        owner: str,
        ttl: float,
        conversation: str,
        seq: int | None,
        running: Entry | None = None,
    ) -> Lease | None:
        turn = self.inner.take_turn(name, owner, ttl, conversation, seq, running)
        return await self._timed("take_turn", turn)

    async def renew(self, lease: Lease, ttl: float) -> bool:
        return await self._timed("renew", self.inner.renew(lease, ttl))

    async def release(self, lease: Lease) -> None:
        await self._timed("release", self.inner.release(lease))

    async def release_finished(self, lease: Lease, entry: Entry) -> None:
        await self._timed("release_finished", self.inner.release_finished(lease, entry))

    async def holder(self, name: str) -> str | None:
        return await self._timed("holder", self.inner.holder(name))

    async def publish(self, topic: str, message: str) -> None:
        await self._timed("publish", self.inner.publish(topic, message))

    def listen(self, topic: str) -> AsyncIterator[str]:
        return self.inner.listen(topic)  # waits for messages: its time says nothing
