"""Durable state behind one small interface: namespaced string keys, JSON values.

Holds what must survive a restart of the gateway (the Electric runtime's stream positions and
/new counts today; sessions, queues and dedupe keys later). Keys are namespaced by their owner,
``"<area>:<name>"``, so that one store serves every part of the gateway. Values are anything
``json`` can encode; every store hands back a fresh copy, never a shared object.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import Settings


class StateStore(ABC):
    """Async key-value store. ``open`` before use, ``close`` when done (both idempotent)."""

    async def open(self) -> None:
        """Acquire resources (files, connections)."""

    async def close(self) -> None:
        """Release them; writes already awaited are durable."""

    @abstractmethod
    async def get(self, key: str) -> Any | None:
        """The value stored under ``key``, or None."""

    @abstractmethod
    async def set(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-encodable) under ``key``, replacing any previous value."""

    @abstractmethod
    async def delete(self, key: str) -> bool:
        """Remove ``key``; True when it existed."""


class MemoryStore(StateStore):
    """Process-local store: state lasts as long as the process. Holds at most ``max_items``
    keys, forgetting the least recently used beyond that: what is kept here must be safe to
    lose (a cache of what the runtime can find again), or kept in SQLite.
    """

    def __init__(self, max_items: int = 10_000) -> None:
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        self.max_items = max_items
        self._items: OrderedDict[str, str] = OrderedDict()

    async def get(self, key: str) -> Any | None:
        raw = self._items.get(key)
        if raw is None:
            return None
        self._items.move_to_end(key)
        return json.loads(raw)

    async def set(self, key: str, value: Any) -> None:
        # Stored encoded, as SQLite does: same JSON rules, and no aliasing of mutable values.
        self._items[key] = json.dumps(value, ensure_ascii=False)
        self._items.move_to_end(key)
        while len(self._items) > self.max_items:
            self._items.popitem(last=False)

    async def delete(self, key: str) -> bool:
        return self._items.pop(key, None) is not None


_SCHEMA = "CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


class SqliteStore(StateStore):
    """One SQLite file (stdlib ``sqlite3``); blocking calls run in a worker thread."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one connection, used from worker threads in turn

    async def open(self) -> None:
        if self._db is None:
            self._db = await asyncio.to_thread(self._connect)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(_SCHEMA)
        return db

    async def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            await asyncio.to_thread(self._locked, db.close)

    def _locked(self, fn: Any, *args: Any) -> Any:
        with self._lock:
            return fn(*args)

    async def _run(self, sql: str, params: tuple[Any, ...]) -> tuple[list[tuple[Any, ...]], int]:
        """(rows, rowcount) of one statement; autocommit, so a write is durable once awaited."""
        if self._db is None:
            raise RuntimeError("the SQLite store is not open")
        db = self._db

        def execute() -> tuple[list[tuple[Any, ...]], int]:
            cursor = db.execute(sql, params)
            return cursor.fetchall(), cursor.rowcount

        result: tuple[list[tuple[Any, ...]], int] = await asyncio.to_thread(self._locked, execute)
        return result

    async def get(self, key: str) -> Any | None:
        rows, _ = await self._run("SELECT value FROM state WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    async def set(self, key: str, value: Any) -> None:
        encoded = json.dumps(value, ensure_ascii=False)
        await self._run(
            "INSERT INTO state (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, encoded),
        )

    async def delete(self, key: str) -> bool:
        _, count = await self._run("DELETE FROM state WHERE key = ?", (key,))
        return count > 0


def open_store(settings: Settings) -> StateStore:
    """The store the settings choose (not yet opened)."""
    if settings.store == "sqlite":
        return SqliteStore(settings.state_path)
    return MemoryStore(settings.memory_store_size)
